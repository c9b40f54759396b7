/*
 * The PTX front end (src/ptx): real nvcc output parses into the records the executor reads
 * (entries, parameters, registers, variables with their initialisers, decoded instructions with
 * resolved operands, labels, calls and positions); each kind of mistake gives its message at its
 * line and column; every allocation may fail without a crash or a leak (run under valgrind or
 * ASan for the leaks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "ptx/ptx.h"

#include "../examples/kernels/capture_guard_ptx.h"
#include "../examples/kernels/conditional_ptx.h"
#include "../examples/kernels/fork_join_ptx.h"
#include "../examples/kernels/pools_ptx.h"
#include "../examples/kernels/quickstart_ptx.h"
#include "../examples/kernels/reduction_ptx.h"
#include "../examples/kernels/update_ptx.h"

/* ---------------------------------------------------------------- PTX from nvcc 13.0 (trimmed) */

static const char calls_ptx[] = ".version 8.0\n"
                                ".target sm_80\n"
                                ".address_size 64\n"
                                "\n"
                                ".extern .func  (.param .b32 func_retval0) vprintf\n"
                                "(\n"
                                "\t.param .b64 vprintf_param_0,\n"
                                "\t.param .b64 vprintf_param_1\n"
                                ")\n"
                                ";\n"
                                ".func  (.param .b32 func_retval0) later\n"
                                "(\n"
                                "\t.param .b32 later_param_0\n"
                                ")\n"
                                ";\n"
                                ".global .align 1 .b8 $str[6] = {104, 105, 32, 37, 100};\n"
                                "\n"
                                ".func  (.param .b32 func_retval0) helper(\n"
                                "\t.param .b32 helper_param_0,\n"
                                "\t.param .b32 helper_param_1\n"
                                ")\n"
                                "{\n"
                                "\t.reg .b32 \t%r<5>;\n"
                                "\n"
                                "\tld.param.u32 \t%r1, [helper_param_0];\n"
                                "\tld.param.u32 \t%r2, [helper_param_1];\n"
                                "\tmad.lo.s32 \t%r4, %r2, %r1, %r1;\n"
                                "\tst.param.b32 \t[func_retval0+0], %r4;\n"
                                "\tret;\n"
                                "}\n"
                                "\t// .globl\tkern\n"
                                ".visible .entry kern(\n"
                                "\t.param .u64 kern_param_0,\n"
                                "\t.param .align 8 .b8 kern_param_1[16]\n"
                                ")\n"
                                ".maxntid 256, 1, 1\n"
                                ".minnctapersm 2\n"
                                "{\n"
                                "\t.local .align 8 .b8 \t__local_depot1[8];\n"
                                "\t.reg .b64 \t%SP;\n"
                                "\t.reg .b64 \t%SPL;\n"
                                "\t.reg .b32 \t%r<6>;\n"
                                "\t.reg .b64 \t%rd<6>;\n"
                                "\n"
                                "\tmov.u64 \t%SPL, __local_depot1;\n"
                                "\tcvta.local.u64 \t%SP, %SPL;\n"
                                "\tld.param.u64 \t%rd1, [kern_param_0];\n"
                                "\tld.param.u32 \t%r1, [kern_param_1+8];\n"
                                "\tadd.u64 \t%rd2, %SP, 0;\n"
                                "\tadd.u64 \t%rd3, %SPL, 0;\n"
                                "\tst.local.u32 \t[%rd3], %r1;\n"
                                "\tmov.u64 \t%rd4, $str;\n"
                                "\tcvta.global.u64 \t%rd5, %rd4;\n"
                                "\t{ // callseq 0, 0\n"
                                "\t.reg .b32 temp_param_reg;\n"
                                "\t.param .b64 param0;\n"
                                "\tst.param.b64 \t[param0+0], %rd5;\n"
                                "\t.param .b64 param1;\n"
                                "\tst.param.b64 \t[param1+0], %rd2;\n"
                                "\t.param .b32 retval0;\n"
                                "\tcall.uni (retval0), \n"
                                "\tvprintf, \n"
                                "\t(\n"
                                "\tparam0, \n"
                                "\tparam1\n"
                                "\t);\n"
                                "\tld.param.b32 \t%r2, [retval0+0];\n"
                                "\t} // callseq 0\n"
                                "\t{ // callseq 1, 0\n"
                                "\t.reg .b32 temp_param_reg;\n"
                                "\t.param .b32 param0;\n"
                                "\tst.param.b32 \t[param0+0], %r1;\n"
                                "\t.param .b32 param1;\n"
                                "\tst.param.b32 \t[param1+0], %r2;\n"
                                "\t.param .b32 retval0;\n"
                                "\tcall.uni (retval0), \n"
                                "\thelper, \n"
                                "\t(\n"
                                "\tparam0, \n"
                                "\tparam1\n"
                                "\t);\n"
                                "\tld.param.b32 \t%r3, [retval0+0];\n"
                                "\t} // callseq 1\n"
                                "\t{ // callseq 2, 0\n"
                                "\t.reg .b32 temp_param_reg;\n"
                                "\t.param .b32 param0;\n"
                                "\tst.param.b32 \t[param0+0], %r3;\n"
                                "\t.param .b32 retval0;\n"
                                "\tcall.uni (retval0), \n"
                                "\tlater, \n"
                                "\t(\n"
                                "\tparam0\n"
                                "\t);\n"
                                "\tld.param.b32 \t%r4, [retval0+0];\n"
                                "\t} // callseq 2\n"
                                "\tst.global.u32 \t[%rd1], %r4;\n"
                                "\tret;\n"
                                "}\n"
                                ".func  (.param .b32 func_retval0) later(\n"
                                "\t.param .b32 later_param_0\n"
                                ")\n"
                                "{\n"
                                "\t.reg .b32 \t%r<3>;\n"
                                "\n"
                                "\tld.param.u32 \t%r1, [later_param_0];\n"
                                "\tadd.s32 \t%r2, %r1, 1;\n"
                                "\tst.param.b32 \t[func_retval0+0], %r2;\n"
                                "\tret;\n"
                                "}\n";

static const char warp_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               "\n"
                               ".visible .entry warp(\n"
                               "\t.param .u64 warp_param_0\n"
                               ")\n"
                               "{\n"
                               "\t.reg .pred \t%p<4>;\n"
                               "\t.reg .b32 \t%r<20>;\n"
                               "\t.reg .f32 \t%f<2>;\n"
                               "\t.reg .f64 \t%fd<2>;\n"
                               "\t.reg .b64 \t%rd<6>;\n"
                               "\t.shared .align 8 .b8 sh[256];\n"
                               "\n"
                               "\tld.param.u64 \t%rd1, [warp_param_0];\n"
                               "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
                               "\tmov.u32 \t%r1, %tid.x;\n"
                               "\tmov.u32 \t%r2, %ntid.y;\n"
                               "\tmov.u32 \t%r3, %ctaid.z;\n"
                               "\tmov.u32 \t%r4, %laneid;\n"
                               "\tmov.u32 \t%r5, %lanemask_lt;\n"
                               "\tmov.u64 \t%rd3, %clock64;\n"
                               "\tmov.u64 \t%rd4, %globaltimer;\n"
                               "\tmov.u32 \t%r6, %dynamic_smem_size;\n"
                               "\tshfl.sync.idx.b32 \t%r7|%p1, %r1, 3, 31, -1;\n"
                               "\tshfl.sync.bfly.b32 \t%r8|%p2, %r1, 4, 31, -1;\n"
                               "\tsetp.ne.s32 \t%p3, %r1, 0;\n"
                               "\tvote.sync.ballot.b32 \t%r9, %p3, -1;\n"
                               "\tvote.sync.all.pred \t%p1, !%p3, -1;\n"
                               "\tmatch.any.sync.b32 \t%r10, %r1, -1;\n"
                               "\tredux.sync.add.u32 %r11, %r1, -1;\n"
                               "\tredux.sync.max.s32 %r12, %r1, -1;\n"
                               "\tactivemask.b32 %r13;\n"
                               "\tbar.sync \t0;\n"
                               "\tbarrier.sync.aligned \t1, 64;\n"
                               "\tbar.red.popc.u32 \t%r14, 0, %p3;\n"
                               "\tbar.red.and.pred \t%p2, 0, !%p3;\n"
                               "\tbar.warp.sync \t-1;\n"
                               "\tbar.arrive \t2, 64;\n"
                               "\tmov.u32 \t%r15, sh;\n"
                               "\tatom.shared.add.u32 \t%r16, [%r15+4], 1;\n"
                               "\tatom.global.cas.b32 \t%r17, [%rd2], %r1, %r16;\n"
                               "\tatom.global.add.f32 \t%f1, [%rd2+8], 0f3F800000;\n"
                               "\tatom.global.add.f64 \t%fd1, [%rd2+16], 0d3FF0000000000000;\n"
                               "\tatom.global.cta.add.u32 \t%r18, [%rd2+24], 1;\n"
                               "\tatom.add.acq_rel.gpu.s32 %r19,[%rd1],%r1;\n"
                               "\tatom.exch.acquire.sys.b32 %r19,[%rd1],%r1;\n"
                               "\tatom.global.inc.u32 \t%r19, [%rd2+28], 17;\n"
                               "\tatom.global.max.s64 \t%rd5, [%rd2+32], %rd3;\n"
                               "\tred.global.add.u32 \t[%rd2+40], 1;\n"
                               "\tred.shared.or.b32 \t[sh+8], %r1;\n"
                               "\tmembar.gl;\n"
                               "\tmembar.cta;\n"
                               "\tfence.sc.sys;\n"
                               "\tfence.acq_rel.cta;\n"
                               "\t{\n"
                               "\t.reg .pred \t%p1;\n"
                               "\tsetp.ne.u32 \t%p1, %r1, 0;\n"
                               "\tbar.red.or.pred \t%p1, 0, %p1;\n"
                               "\t@!%p1 bra \t$L__BB0_1;\n"
                               "\t}\n"
                               "\tst.global.u32 \t[%rd2], %r7;\n"
                               "$L__BB0_1:\n"
                               "\tret;\n"
                               "}\n";

static const char math_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               "\n"
                               ".visible .entry math(\n"
                               "\t.param .u64 math_param_0\n"
                               ")\n"
                               "{\n"
                               "\t.reg .pred \t%p<4>;\n"
                               "\t.reg .b16 \t%rs<3>;\n"
                               "\t.reg .b32 \t%r<24>;\n"
                               "\t.reg .f32 \t%f<12>;\n"
                               "\t.reg .b64 \t%rd<12>;\n"
                               "\t.reg .f64 \t%fd<8>;\n"
                               "\n"
                               "\tld.param.u64 \t%rd1, [math_param_0];\n"
                               "\tld.global.nc.v4.f32 \t{%f1, %f2, _, %f4}, [%rd1];\n"
                               "\tld.global.v2.f64 \t{%fd1, %fd2}, [%rd1+16];\n"
                               "\tld.volatile.global.u32 \t%r1, [%rd1+-8];\n"
                               "\tld.relaxed.gpu.global.u32 \t%r2, [%rd1+4];\n"
                               "\tld.acquire.gpu.global.u32 \t%r3, [%rd1];\n"
                               "\tld.global.L1::no_allocate.u32 \t%r4, [%rd1];\n"
                               "\tld.global.L2::128B.u32 \t%r5, [%rd1];\n"
                               "\tcvt.rzi.s32.f32 \t%r6, %f1;\n"
                               "\tcvt.rn.f32.s64 \t%f5, %rd1;\n"
                               "\tcvt.rni.f64.f64 \t%fd3, %fd1;\n"
                               "\tcvt.sat.f32.f32 \t%f6, %f2;\n"
                               "\tcvt.u16.u32 \t%rs1, %r1;\n"
                               "\tdiv.rn.f64 \t%fd4, %fd1, %fd2;\n"
                               "\trcp.approx.ftz.f64 \t%fd5, %fd4;\n"
                               "\tsqrt.rn.f32 \t%f7, %f4;\n"
                               "\tex2.approx.ftz.f32 \t%f8, %f7;\n"
                               "\tfma.rn.f64 \t%fd6, %fd5, %fd4, 0d3FF0000000000000;\n"
                               "\tmin.NaN.f32 \t%f9, %f8, 0f7FC00000;\n"
                               "\tcopysign.f32 \t%f10, %f9, %f8;\n"
                               "\ttestp.finite.f32 \t%p1, %f10;\n"
                               "\tsetp.lt.and.s32 \t%p2|%p3, %r1, %r2, %p1;\n"
                               "\tset.lt.u32.f32 \t%r7, %f1, %f2;\n"
                               "\tslct.f32.s32 \t%f11, %f1, %f2, %r3;\n"
                               "\tselp.b32 \t%r8, %r1, 0x7fffffff, %p2;\n"
                               "\tmul.hi.u32 \t%r9, %r1, -1431655765;\n"
                               "\tmul.wide.s32 \t%rd2, %r1, -8;\n"
                               "\tmad.lo.cc.u32 \t%r10, %r1, %r2, %r3;\n"
                               "\tmadc.hi.u32 \t%r11, %r1, %r2, 0;\n"
                               "\tadd.cc.u32 \t%r12, %r1, 010;\n"
                               "\taddc.u32 \t%r13, %r2, 0b101;\n"
                               "\tprmt.b32.f4e \t%r14, %r1, %r2, %r3;\n"
                               "\tprmt.b32 \t%r15, %r1, %r2, 0x3210U;\n"
                               "\tlop3.b32 \t%r16, %r1, %r2, %r3, 0x96;\n"
                               "\tshf.l.wrap.b32 \t%r17, %r1, %r2, %r3;\n"
                               "\tshf.r.clamp.b32 \t%r18, %r1, %r2, 5;\n"
                               "\tbfe.u32 \t%r19, %r1, 8, 4;\n"
                               "\tbfi.b32 \t%r20, %r1, %r2, 8, 4;\n"
                               "\tbfind.shiftamt.u32 \t%r21, %r1;\n"
                               "\tmov.b64 \t{%r22, %r23}, %rd2;\n"
                               "\tmov.b64 \t%rd3, {%r23, %r22};\n"
                               "\tmov.f64 \t%fd7, 0d3FF8000000000000;\n"
                               "\tisspacep.global \t%p1, %rd1;\n"
                               "\tcvta.shared.u64 \t%rd4, %rd1;\n"
                               "\tst.release.gpu.global.u32 \t[%rd1], %r21;\n"
                               "\tst.global.v4.f32 \t[%rd1+32], {%f9, %f10, %f11, %f5};\n"
                               "\tld.local.u32 \t%r1, [0x1000];\n"
                               "\tst.global.f64 \t[%rd1+48], %fd7;\n"
                               "\tret;\n"
                               "}\n";

static const char vars_ptx[] = ".version 8.0\n"
                               ".target sm_80\n"
                               ".address_size 64\n"
                               "\n"
                               ".global .align 4 .b8 arr[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};\n"
                               ".global .align 8 .u64 s[3] = {7, generic(arr)+4, 4620693217682129016};\n"
                               ".global .align 8 .u64 ptr = generic(arr);\n"
                               ".visible .global .align 4 .f32 fv = 0f3FA00000;\n"
                               ".global .align 8 .f64 dv = 0dC004000000000000;\n"
                               ".global .align 2 .b8 sh[6] = {255, 255, 2, 0, 253, 255};\n"
                               ".global .align 8 .u64 big = -9223372036854775808;\n"
                               ".const .align 4 .b8 multi[24] = {1, 0, 0, 0, 2};\n"
                               ".global .align 4 .u32 counter = 5;\n"
                               ".global .align 2 .u16 halves[3] = {-1, 0xFFFF, 7};\n"
                               ".global .align 8 .u64 plain = arr;\n"
                               ".shared .align 4 .b8 stat[64];\n"
                               ".extern .shared .align 16 .b8 dyn[];\n"
                               ".global .align 1 .b8 name[] = {104, 105, 0};\n"
                               "\n"
                               ".visible .entry k(\n"
                               "\t.param .u64 k_param_0\n"
                               ")\n"
                               "{\n"
                               "\t.reg .b32 \t%r<3>;\n"
                               "\t.reg .b64 \t%rd<5>;\n"
                               "\n"
                               "\tld.param.u64 \t%rd1, [k_param_0];\n"
                               "\tmov.u64 \t%rd2, arr;\n"
                               "\tmov.u64 \t%rd3, arr+8;\n"
                               "\tld.global.u64 \t%rd4, [s+8];\n"
                               "\tmov.u32 \t%r1, dyn;\n"
                               "\tld.shared.u32 \t%r2, [stat+4];\n"
                               "\tst.shared.u32 \t[%r1], %r2;\n"
                               "\tld.const.u32 \t%r2, [multi];\n"
                               "\tst.global.u32 \t[counter], %r2;\n"
                               "\tret;\n"
                               "}\n";

static const char hdr_ptx[] = "//\n"
                              "// Generated by hand after NVVM's output\n"
                              "//\n"
                              "\n"
                              ".version 9.0\n"
                              ".target sm_90a\n"
                              ".address_size 64\n"
                              "\n"
                              "\t// .globl\tk\n"
                              ".visible .entry k(\n"
                              "\t.param .u64 .ptr .global .align 16 k_param_0,\n"
                              "\t.param .align 8 .b8 k_param_1[24],\n"
                              "\t.param .f64 k_param_2\n"
                              ")\n"
                              ".reqntid 128, 2\n"
                              ".maxnreg 64\n"
                              "{\n"
                              "\t.reg .pred p, q;\n"
                              "\t.reg .b32 %r<3>;\n"
                              "\t.reg .b64 %rd<3>;\n"
                              "\n"
                              "\t.pragma \"nounroll\";\n"
                              "\tld.param.u64 %rd1, [k_param_0];\n"
                              "\tsetp.eq.u64 p|q, %rd1, 0;\n"
                              "\t@p bra $L__done;\n"
                              "\t{\n"
                              "\t.param .b32 param0;\n"
                              "\tst.param.b32 [param0+0], 1;\n"
                              "\t.param .b32 retval0;\n"
                              "\tprototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);\n"
                              "\tcall (retval0), %rd1, (param0), prototype_0;\n"
                              "\tld.param.b32 %r1, [retval0+0];\n"
                              "\t}\n"
                              "$L__done:\n"
                              "\tret;\n"
                              "}\n"
                              ".func stop() .noreturn\n"
                              "{\n"
                              "\ttrap;\n"
                              "}\n";

static const char dbg_ptx[] = ".version 8.0\n"
                              ".target sm_80, debug\n"
                              ".address_size 64\n"
                              "\n"
                              ".visible .entry dbg(\n"
                              "\t.param .u64 dbg_param_0\n"
                              ")\n"
                              "{\n"
                              "\t.reg .b32 \t%r<3>;\n"
                              "\t.reg .b64 \t%rd<3>;\n"
                              "\t.loc\t1 3 0\n"
                              "$L__func_begin0:\n"
                              "\t.loc\t1 3 0\n"
                              "\n"
                              "\tld.param.u64 \t%rd1, [dbg_param_0];\n"
                              "$L__tmp0:\n"
                              "\t.loc\t1 4 5\n"
                              "\tmov.u32 \t%r1, %tid.x;\n"
                              "\t.loc\t2 110 3, function_name $L__info_string0, inlined_at 1 4 5\n"
                              "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
                              "\tst.global.u32 \t[%rd2], %r1;\n"
                              "\t.loc\t1 6 1\n"
                              "\tret;\n"
                              "$L__tmp1:\n"
                              "$L__func_end0:\n"
                              "\n"
                              "}\n"
                              "\t.file\t1 \"/src/dbg.cu\"\n"
                              "\t.file\t2 \"/usr/include/x.h\", 1700000000, 1234\n"
                              "\t.section\t.debug_str\n"
                              "\t{\n"
                              "$L__info_string0:\n"
                              ".b8 95,90,51,102,111,111,0\n"
                              "\t}\n";

static const char decls_ptx[] = ".version 8.0\n"
                                ".target sm_80\n"
                                ".address_size 64\n"
                                "\n"
                                ".visible .entry weird(\n"
                                "\t.param .u64 weird_param_0,\n"
                                "\t.param .u32 weird_param_1\n"
                                ")\n"
                                "{\n"
                                "\tfrobnicate.xyz %q1, \"}\", [nowhere]; // } in a comment\n"
                                "\t/* { */\n"
                                "\t{ { } }\n"
                                "\tnot even ptx @@@ ;\n"
                                "}\n"
                                ".visible .entry second()\n"
                                "{\n"
                                "\tret;\n"
                                "}\n";

/* ---------------------------------------------------------------- helpers */

static struct ptx_module *parse_ok(const char *text, enum ptx_parse_mode mode) {
  struct ptx_error err;
  struct ptx_module *m = ptx_parse(text, strlen(text), mode, &err);
  if (!m) fail_msg("parse failed at %u:%u: %s", err.line, err.column, err.message);
  return m;
}

static const struct ptx_func *func_of(const struct ptx_module *m, const char *name) {
  const struct ptx_func *f = ptx_find_func(m, name);
  if (!f) fail_msg("no function \"%s\"", name);
  return f;
}

/* The instruction whose squeezed text is `text`. */
static const struct ptx_instr *instr_of(const struct ptx_func *f, const char *text) {
  for (size_t i = 0; i < f->num_instrs; i++)
    if (strcmp(f->instrs[i].text, text) == 0) return &f->instrs[i];
  fail_msg("no instruction \"%s\" in %s", text, f->name);
  return NULL;
}

static size_t index_of(const struct ptx_func *f, const char *text) { return (size_t)(instr_of(f, text) - f->instrs); }

static uint32_t reg_of(const struct ptx_func *f, const char *name) {
  for (size_t i = f->num_regs; i-- > 0;)
    if (strcmp(f->regs[i].name, name) == 0) return (uint32_t)i;
  fail_msg("no register \"%s\" in %s", name, f->name);
  return 0;
}

static void assert_reg(const struct ptx_operand *o, uint32_t reg) {
  assert_int_equal(o->kind, PTX_OPND_REG);
  assert_int_equal(o->index, reg);
}

static void assert_sym(const struct ptx_operand *o, unsigned kind, unsigned scope, uint32_t index, int64_t offset) {
  assert_int_equal(o->kind, kind);
  if (kind == PTX_OPND_ADDR) assert_int_equal(o->base, PTX_ADDR_SYM);
  assert_int_equal(o->scope, scope);
  assert_int_equal(o->index, index);
  assert_int_equal(o->imm, offset);
}

static void assert_imm(const struct ptx_operand *o, unsigned kind, int64_t bits) {
  assert_int_equal(o->kind, PTX_OPND_IMM);
  assert_int_equal(o->imm_kind, kind);
  assert_int_equal(o->imm, bits);
}

static void assert_param(const struct ptx_var *v, const char *name, unsigned type, size_t size, unsigned align) {
  assert_string_equal(v->name, name);
  assert_int_equal(v->space, PTX_SPACE_PARAM);
  assert_int_equal(v->type, type);
  assert_int_equal(v->size, size);
  assert_int_equal(v->align, align);
}

/* ---------------------------------------------------------------- modules */

static void test_reduction_example(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(reduction_ptx, PTX_PARSE_FULL);
  assert_int_equal(m->version_major, 7);
  assert_int_equal(m->version_minor, 5);
  assert_int_equal(m->target_sm, 75);
  assert_int_equal(m->address_size, 64);
  assert_int_equal(m->num_vars, 1);
  const struct ptx_var *partial = ptx_find_var(m, "partial");
  assert_non_null(partial);
  assert_true(partial->is_extern);
  assert_int_equal(partial->space, PTX_SPACE_SHARED);
  assert_int_equal(partial->type, PTX_T_B8);
  assert_int_equal(partial->size, 0);
  assert_int_equal(partial->align, 16);
  assert_null(partial->init);

  assert_int_equal(m->num_funcs, 1);
  const struct ptx_func *f = func_of(m, "reduce");
  assert_true(f->is_entry && f->is_visible && f->has_body && !f->is_extern);
  assert_int_equal(f->num_params, 3);
  assert_param(&f->params[0], "reduce_param_0", PTX_T_U64, 8, 8);
  assert_param(&f->params[2], "reduce_param_2", PTX_T_U32, 4, 4);
  assert_int_equal(f->num_regs, 7 + 29 + 11);
  assert_string_equal(f->regs[0].name, "%p0");
  assert_int_equal(f->regs[0].type, PTX_T_PRED);
  assert_string_equal(f->regs[7 + 28].name, "%r28");
  assert_int_equal(f->regs[7 + 28].type, PTX_T_B32);
  assert_string_equal(f->regs[46].name, "%rd10");
  assert_int_equal(f->num_vars, 0);

  const struct ptx_instr *in = &f->instrs[0];
  assert_int_equal(in->op, PTX_OP_LD);
  assert_int_equal(in->space, PTX_SPACE_PARAM);
  assert_int_equal(in->type, PTX_T_U64);
  assert_int_equal(in->line, 14);
  assert_int_equal(in->column, 2);
  assert_string_equal(in->text, "ld.param.u64 %rd3, [reduce_param_0]");
  assert_sym(&in->opnd[1], PTX_OPND_ADDR, PTX_SCOPE_PARAM, 0, 0);

  in = &f->instrs[8];
  assert_string_equal(in->text, "mad.lo.s32 %r4, %r16, %r2, %r3");
  assert_int_equal(in->op, PTX_OP_MAD);
  assert_int_equal(in->mode, PTX_MUL_LO);
  assert_int_equal(in->type, PTX_T_S32);
  assert_int_equal(in->num_operands, 4);
  assert_reg(&in->opnd[0], reg_of(f, "%r4"));
  assert_int_equal(in->guard, -1);
  assert_int_equal(in->dest2, -1);

  in = &f->instrs[11];
  assert_string_equal(in->text, "@%p1 bra $L__BB0_2");
  assert_int_equal(in->op, PTX_OP_BRA);
  assert_int_equal(in->guard, reg_of(f, "%p1"));
  assert_int_equal(in->guard_neg, 0);
  assert_int_equal(in->line, 25);
  assert_int_equal(in->column, 2);
  assert_int_equal(in->opnd[0].kind, PTX_OPND_LABEL);
  assert_int_equal(in->opnd[0].index, 15);
  assert_string_equal(f->instrs[15].text, "add.s32 %r7, %r4, %r1");

  in = instr_of(f, "mov.u32 %r19, partial");
  assert_sym(&in->opnd[1], PTX_OPND_SYM, PTX_SCOPE_MODULE, 0, 0);
  in = instr_of(f, "ld.shared.u32 %r25, [partial]");
  assert_sym(&in->opnd[1], PTX_OPND_ADDR, PTX_SCOPE_MODULE, 0, 0);
  in = instr_of(f, "st.shared.u32 [%r10], %r27");
  assert_int_equal(in->opnd[0].kind, PTX_OPND_ADDR);
  assert_int_equal(in->opnd[0].base, PTX_ADDR_REG);
  assert_int_equal(in->opnd[0].index, reg_of(f, "%r10"));
  in = instr_of(f, "bar.sync 0");
  assert_int_equal(in->op, PTX_OP_BAR);
  assert_int_equal(in->mode, PTX_BAR_SYNC);
  assert_true(in->flags & PTX_F_ALIGNED);
  assert_true(in->flags & PTX_F_SYNC);
  assert_imm(&in->opnd[0], PTX_IMM_INT, 0);
  in = instr_of(f, "mov.u32 %r3, %tid.x");
  assert_int_equal(in->opnd[1].kind, PTX_OPND_SREG);
  assert_int_equal(in->opnd[1].sreg, PTX_SREG_TID);
  assert_int_equal(in->opnd[1].comp, 0);
  in = instr_of(f, "cvta.to.global.u64 %rd1, %rd3");
  assert_int_equal(in->mode, PTX_CVTA_TO);
  assert_int_equal(in->space, PTX_SPACE_GLOBAL);
  in = &f->instrs[f->num_instrs - 1];
  assert_int_equal(in->op, PTX_OP_RET);
  assert_int_equal(in->num_operands, 0);
  ptx_module_free(m);
}

/* Every PTX the examples load parses in both modes, and the modes agree on the declarations. */
static void test_example_kernels(void **state) {
  (void)state;
  const char *texts[] = {capture_guard_ptx, conditional_ptx, fork_join_ptx, pools_ptx,
                         quickstart_ptx,    reduction_ptx,   update_ptx};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    struct ptx_module *full = parse_ok(texts[i], PTX_PARSE_FULL);
    struct ptx_module *decls = parse_ok(texts[i], PTX_PARSE_DECLS);
    assert_int_equal(full->num_funcs, decls->num_funcs);
    assert_int_equal(full->num_vars, decls->num_vars);
    size_t entries = 0;
    for (size_t k = 0; k < full->num_funcs; k++) {
      const struct ptx_func *a = &full->funcs[k], *b = &decls->funcs[k];
      assert_string_equal(a->name, b->name);
      assert_int_equal(a->num_params, b->num_params);
      for (size_t p = 0; p < a->num_params; p++) assert_int_equal(a->params[p].size, b->params[p].size);
      assert_int_equal(b->num_instrs, 0);
      assert_true(a->has_body == b->has_body);
      assert_true(!a->has_body || a->num_instrs > 0);
      entries += a->is_entry;
    }
    assert_true(entries > 0);
    ptx_module_free(full);
    ptx_module_free(decls);
  }
  struct ptx_module *m = parse_ok(conditional_ptx, PTX_PARSE_FULL);
  const struct ptx_func *set = func_of(m, "cudaGraphSetConditional");
  assert_true(set->is_extern && !set->has_body && !set->is_entry);
  assert_int_equal(set->num_params, 2);
  const struct ptx_func *check = func_of(m, "check");
  const struct ptx_instr *call = instr_of(check, "call.uni cudaGraphSetConditional, ( param0, param1 )");
  assert_int_equal(call->opnd[0].kind, PTX_OPND_FUNC);
  assert_int_equal(call->opnd[0].index, (uint32_t)(set - m->funcs));
  assert_int_equal(call->num_call_rets, 0);
  assert_int_equal(call->num_call_args, 2);
  const struct ptx_instr *pragma_loop = instr_of(func_of(m, "residual"), "ld.global.f32 %f1, [%rd11]");
  assert_int_equal(pragma_loop->op, PTX_OP_LD);
  ptx_module_free(m);
}

static void test_calls_and_blocks(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(calls_ptx, PTX_PARSE_FULL);
  assert_int_equal(m->num_funcs, 4);
  assert_string_equal(m->funcs[0].name, "vprintf");
  assert_true(m->funcs[0].is_extern && !m->funcs[0].has_body);
  assert_int_equal(m->funcs[0].num_rets, 1);
  assert_int_equal(m->funcs[0].num_params, 2);
  /* declared before use, defined at the end: one function */
  const struct ptx_func *later = &m->funcs[1];
  assert_string_equal(later->name, "later");
  assert_true(later->has_body && !later->is_extern);
  assert_int_equal(later->num_instrs, 4);
  assert_int_equal(later->line, 99);
  assert_sym(&later->instrs[0].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_PARAM, 0, 0);

  const struct ptx_func *helper = func_of(m, "helper");
  assert_int_equal(helper->num_rets, 1);
  assert_string_equal(helper->rets[0].name, "func_retval0");
  assert_int_equal(helper->rets[0].size, 4);
  assert_sym(&instr_of(helper, "st.param.b32 [func_retval0+0], %r4")->opnd[0], PTX_OPND_ADDR, PTX_SCOPE_RET, 0, 0);

  const struct ptx_func *k = func_of(m, "kern");
  assert_true(k->is_entry);
  assert_int_equal(k->maxntid[0], 256);
  assert_int_equal(k->maxntid[1], 1);
  assert_int_equal(k->maxntid[2], 1);
  assert_int_equal(k->minnctapersm, 2);
  assert_param(&k->params[1], "kern_param_1", PTX_T_B8, 16, 8);
  assert_string_equal(k->regs[0].name, "%SP");
  assert_int_equal(k->regs[0].type, PTX_T_B64);
  assert_int_equal(k->num_regs, 2 + 6 + 6 + 3); /* and a temp_param_reg in each call block */
  assert_int_equal(k->num_vars, 1 + 3 + 3 + 2);
  assert_string_equal(k->vars[0].name, "__local_depot1");
  assert_int_equal(k->vars[0].space, PTX_SPACE_LOCAL);
  assert_int_equal(k->vars[0].size, 8);
  assert_string_equal(k->vars[4].name, "param0");
  assert_int_equal(k->vars[4].space, PTX_SPACE_PARAM);
  assert_int_equal(k->num_instrs, 22);

  const struct ptx_instr *in = &k->instrs[0];
  assert_string_equal(in->text, "mov.u64 %SPL, __local_depot1");
  assert_int_equal(in->line, 45);
  assert_reg(&in->opnd[0], 1);
  assert_sym(&in->opnd[1], PTX_OPND_SYM, PTX_SCOPE_BODY, 0, 0);
  assert_sym(&k->instrs[3].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_PARAM, 1, 8);
  assert_sym(&instr_of(k, "mov.u64 %rd4, $str")->opnd[1], PTX_OPND_SYM, PTX_SCOPE_MODULE, 0, 0);

  /* param0 and retval0 of each block are the block's own */
  in = &k->instrs[11];
  assert_string_equal(in->text, "call.uni (retval0), vprintf, ( param0, param1 )");
  assert_int_equal(in->op, PTX_OP_CALL);
  assert_true(in->flags & PTX_F_UNI);
  assert_int_equal(in->line, 61);
  assert_int_equal(in->num_operands, 1);
  assert_int_equal(in->opnd[0].kind, PTX_OPND_FUNC);
  assert_int_equal(in->opnd[0].index, 0);
  assert_int_equal(in->num_call_rets, 1);
  assert_int_equal(in->num_call_args, 2);
  assert_sym(&in->call_rets[0], PTX_OPND_SYM, PTX_SCOPE_BODY, 3, 0);
  assert_sym(&in->call_args[0], PTX_OPND_SYM, PTX_SCOPE_BODY, 1, 0);
  assert_sym(&in->call_args[1], PTX_OPND_SYM, PTX_SCOPE_BODY, 2, 0);
  assert_sym(&k->instrs[12].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_BODY, 3, 0);
  in = &k->instrs[15];
  assert_int_equal(in->opnd[0].index, (uint32_t)(helper - m->funcs));
  assert_sym(&in->call_args[0], PTX_OPND_SYM, PTX_SCOPE_BODY, 4, 0);
  assert_sym(&in->call_rets[0], PTX_OPND_SYM, PTX_SCOPE_BODY, 6, 0);
  in = &k->instrs[18];
  assert_int_equal(in->opnd[0].index, 1);
  assert_int_equal(in->num_call_args, 1);
  assert_sym(&in->call_args[0], PTX_OPND_SYM, PTX_SCOPE_BODY, 7, 0);
  assert_sym(&k->instrs[19].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_BODY, 8, 0);
  ptx_module_free(m);
}

static void test_warp_atomics_barriers(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(warp_ptx, PTX_PARSE_FULL);
  const struct ptx_func *f = func_of(m, "warp");
  uint32_t p1 = reg_of(f, "%p1"), p3 = 3, r1 = 5;
  assert_int_equal(p1, 34); /* the inner block's %p1 is the last declared */
  p1 = 1;
  assert_int_equal(f->num_instrs, 46);
  const struct {
    size_t i;
    unsigned sreg, comp, type;
  } sregs[] = {
      {2, PTX_SREG_TID, 0, PTX_T_U32},         {3, PTX_SREG_NTID, 1, PTX_T_U32},
      {4, PTX_SREG_CTAID, 2, PTX_T_U32},       {5, PTX_SREG_LANEID, 0, PTX_T_U32},
      {6, PTX_SREG_LANEMASK_LT, 0, PTX_T_U32}, {7, PTX_SREG_CLOCK64, 0, PTX_T_U64},
      {8, PTX_SREG_GLOBALTIMER, 0, PTX_T_U64}, {9, PTX_SREG_DYNAMIC_SMEM_SIZE, 0, PTX_T_U32},
  };
  for (size_t s = 0; s < sizeof sregs / sizeof sregs[0]; s++) {
    const struct ptx_instr *in = &f->instrs[sregs[s].i];
    assert_int_equal(in->type, sregs[s].type);
    assert_int_equal(in->opnd[1].kind, PTX_OPND_SREG);
    assert_int_equal(in->opnd[1].sreg, sregs[s].sreg);
    assert_int_equal(in->opnd[1].comp, sregs[s].comp);
  }
  const struct ptx_instr *in = &f->instrs[10];
  assert_int_equal(in->op, PTX_OP_SHFL);
  assert_int_equal(in->mode, PTX_SHFL_IDX);
  assert_true(in->flags & PTX_F_SYNC);
  assert_int_equal(in->type, PTX_T_B32);
  assert_int_equal(in->num_operands, 5);
  assert_int_equal(in->dest2, p1);
  assert_imm(&in->opnd[4], PTX_IMM_INT, -1);
  assert_int_equal(f->instrs[11].mode, PTX_SHFL_BFLY);
  in = &f->instrs[13];
  assert_int_equal(in->op, PTX_OP_VOTE);
  assert_int_equal(in->mode, PTX_VOTE_BALLOT);
  assert_int_equal(in->type, PTX_T_B32);
  in = &f->instrs[14];
  assert_int_equal(in->mode, PTX_VOTE_ALL);
  assert_int_equal(in->type, PTX_T_PRED);
  assert_reg(&in->opnd[0], p1);
  assert_reg(&in->opnd[1], p3);
  assert_int_equal(in->opnd[1].negate, 1);
  assert_int_equal(f->instrs[15].op, PTX_OP_MATCH);
  assert_int_equal(f->instrs[15].mode, PTX_MATCH_ANY);
  assert_int_equal(f->instrs[16].op, PTX_OP_REDUX);
  assert_int_equal(f->instrs[16].boolop, PTX_BOOL_ADD);
  assert_int_equal(f->instrs[16].type, PTX_T_U32);
  assert_int_equal(f->instrs[17].boolop, PTX_BOOL_MAX);
  assert_int_equal(f->instrs[17].type, PTX_T_S32);
  assert_string_equal(f->instrs[17].text, "redux.sync.max.s32 %r12, %r1, -1");
  assert_int_equal(f->instrs[18].op, PTX_OP_ACTIVEMASK);

  in = &f->instrs[20];
  assert_int_equal(in->op, PTX_OP_BARRIER);
  assert_int_equal(in->mode, PTX_BAR_SYNC);
  assert_int_equal(in->flags & (PTX_F_SYNC | PTX_F_ALIGNED), PTX_F_SYNC | PTX_F_ALIGNED);
  assert_int_equal(in->num_operands, 2);
  in = &f->instrs[21];
  assert_int_equal(in->op, PTX_OP_BAR);
  assert_int_equal(in->mode, PTX_BAR_RED);
  assert_int_equal(in->boolop, PTX_BOOL_POPC);
  assert_int_equal(in->type, PTX_T_U32);
  assert_int_equal(f->instrs[22].boolop, PTX_BOOL_AND);
  assert_int_equal(f->instrs[22].type, PTX_T_PRED);
  assert_int_equal(f->instrs[22].opnd[2].negate, 1);
  assert_int_equal(f->instrs[23].mode, PTX_BAR_WARP_SYNC);
  assert_int_equal(f->instrs[24].mode, PTX_BAR_ARRIVE);

  assert_int_equal(f->num_vars, 1);
  assert_int_equal(f->vars[0].space, PTX_SPACE_SHARED);
  assert_int_equal(f->vars[0].size, 256);
  assert_sym(&f->instrs[25].opnd[1], PTX_OPND_SYM, PTX_SCOPE_BODY, 0, 0);
  const struct {
    size_t i;
    unsigned mode, space, type, operands;
  } atoms[] = {
      {26, PTX_ATOM_ADD, PTX_SPACE_SHARED, PTX_T_U32, 3},   {27, PTX_ATOM_CAS, PTX_SPACE_GLOBAL, PTX_T_B32, 4},
      {28, PTX_ATOM_ADD, PTX_SPACE_GLOBAL, PTX_T_F32, 3},   {29, PTX_ATOM_ADD, PTX_SPACE_GLOBAL, PTX_T_F64, 3},
      {30, PTX_ATOM_ADD, PTX_SPACE_GLOBAL, PTX_T_U32, 3},   {31, PTX_ATOM_ADD, PTX_SPACE_GENERIC, PTX_T_S32, 3},
      {32, PTX_ATOM_EXCH, PTX_SPACE_GENERIC, PTX_T_B32, 3}, {33, PTX_ATOM_INC, PTX_SPACE_GLOBAL, PTX_T_U32, 3},
      {34, PTX_ATOM_MAX, PTX_SPACE_GLOBAL, PTX_T_S64, 3},
  };
  for (size_t a = 0; a < sizeof atoms / sizeof atoms[0]; a++) {
    in = &f->instrs[atoms[a].i];
    assert_int_equal(in->op, PTX_OP_ATOM);
    assert_int_equal(in->mode, atoms[a].mode);
    assert_int_equal(in->space, atoms[a].space);
    assert_int_equal(in->type, atoms[a].type);
    assert_int_equal(in->num_operands, atoms[a].operands);
    assert_int_equal(in->opnd[1].kind, PTX_OPND_ADDR);
    assert_int_equal(!!(in->flags & PTX_F_SCOPE_CTA), atoms[a].i == 30);
  }
  assert_int_equal(f->instrs[26].opnd[1].imm, 4);
  assert_imm(&f->instrs[28].opnd[2], PTX_IMM_F32BITS, 0x3F800000);
  assert_imm(&f->instrs[29].opnd[2], PTX_IMM_F64BITS, 0x3FF0000000000000);
  in = &f->instrs[36];
  assert_int_equal(in->op, PTX_OP_RED);
  assert_int_equal(in->mode, PTX_ATOM_OR);
  assert_sym(&in->opnd[0], PTX_OPND_ADDR, PTX_SCOPE_BODY, 0, 8);
  assert_int_equal(f->instrs[37].mode, PTX_LEVEL_GL);
  assert_int_equal(f->instrs[38].mode, PTX_LEVEL_CTA);
  assert_int_equal(f->instrs[39].op, PTX_OP_FENCE);
  assert_int_equal(f->instrs[39].mode, PTX_LEVEL_SYS);
  assert_int_equal(f->instrs[40].mode, PTX_LEVEL_CTA);
  assert_true(f->instrs[40].flags & PTX_F_SCOPE_CTA);

  /* the nested block's %p1 shadows the outer one; its branch reaches a label outside */
  assert_reg(&f->instrs[41].opnd[0], 34);
  assert_reg(&f->instrs[41].opnd[1], r1);
  in = &f->instrs[43];
  assert_int_equal(in->guard, 34);
  assert_int_equal(in->guard_neg, 1);
  assert_int_equal(in->opnd[0].index, 45);
  assert_reg(&f->instrs[44].opnd[1], reg_of(f, "%r7"));
  ptx_module_free(m);
}

static void test_math_memory_literals(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(math_ptx, PTX_PARSE_FULL);
  const struct ptx_func *f = func_of(m, "math");
  const struct ptx_instr *in = &f->instrs[1];
  assert_int_equal(in->op, PTX_OP_LD);
  assert_int_equal(in->space, PTX_SPACE_GLOBAL);
  assert_int_equal(in->vec, 4);
  assert_int_equal(in->type, PTX_T_F32);
  assert_int_equal(in->opnd[0].kind, PTX_OPND_VEC);
  assert_int_equal(in->opnd[0].count, 4);
  assert_int_equal(in->opnd[0].elems[0].kind, PTX_OPND_REG);
  assert_int_equal(in->opnd[0].elems[0].reg, reg_of(f, "%f1"));
  assert_int_equal(in->opnd[0].elems[2].kind, PTX_OPND_SINK);
  assert_int_equal(f->instrs[2].vec, 2);
  assert_int_equal(f->instrs[2].opnd[1].imm, 16);
  in = &f->instrs[3];
  assert_true(in->flags & PTX_F_VOLATILE);
  assert_int_equal(in->opnd[1].base, PTX_ADDR_REG);
  assert_int_equal(in->opnd[1].imm, -8);
  for (size_t i = 4; i <= 7; i++) {
    assert_int_equal(f->instrs[i].space, PTX_SPACE_GLOBAL);
    /* .relaxed and .acquire make a strong load, as .volatile; cache hints leave no trace */
    assert_int_equal(f->instrs[i].flags, i <= 5 ? PTX_F_VOLATILE : 0);
    assert_int_equal(f->instrs[i].vec, 1);
  }
  const struct {
    size_t i;
    unsigned type, type2, round;
    uint16_t flags;
  } cvts[] = {
      {8, PTX_T_S32, PTX_T_F32, PTX_RND_RZI, 0},   {9, PTX_T_F32, PTX_T_S64, PTX_RND_RN, 0},
      {10, PTX_T_F64, PTX_T_F64, PTX_RND_RNI, 0},  {11, PTX_T_F32, PTX_T_F32, PTX_RND_NONE, PTX_F_SAT},
      {12, PTX_T_U16, PTX_T_U32, PTX_RND_NONE, 0},
  };
  for (size_t c = 0; c < sizeof cvts / sizeof cvts[0]; c++) {
    in = &f->instrs[cvts[c].i];
    assert_int_equal(in->op, PTX_OP_CVT);
    assert_int_equal(in->type, cvts[c].type);
    assert_int_equal(in->type2, cvts[c].type2);
    assert_int_equal(in->round, cvts[c].round);
    assert_int_equal(in->flags, cvts[c].flags);
  }
  assert_int_equal(f->instrs[13].round, PTX_RND_RN);
  assert_int_equal(f->instrs[14].flags, PTX_F_APPROX | PTX_F_FTZ);
  assert_int_equal(f->instrs[14].type, PTX_T_F64);
  assert_int_equal(f->instrs[16].op, PTX_OP_EX2);
  assert_imm(&f->instrs[17].opnd[3], PTX_IMM_F64BITS, 0x3FF0000000000000);
  in = &f->instrs[18];
  assert_int_equal(in->op, PTX_OP_MIN);
  assert_int_equal(in->flags, PTX_F_NAN);
  assert_imm(&in->opnd[2], PTX_IMM_F32BITS, 0x7FC00000);
  assert_int_equal(f->instrs[19].op, PTX_OP_COPYSIGN);
  assert_int_equal(f->instrs[20].op, PTX_OP_TESTP);
  assert_int_equal(f->instrs[20].mode, PTX_TESTP_FINITE);
  in = &f->instrs[21];
  assert_int_equal(in->cmp, PTX_CMP_LT);
  assert_int_equal(in->boolop, PTX_BOOL_AND);
  assert_int_equal(in->type, PTX_T_S32);
  assert_int_equal(in->num_operands, 4);
  assert_reg(&in->opnd[0], reg_of(f, "%p2"));
  assert_int_equal(in->dest2, reg_of(f, "%p3"));
  in = &f->instrs[22];
  assert_int_equal(in->op, PTX_OP_SET);
  assert_int_equal(in->type, PTX_T_U32);
  assert_int_equal(in->type2, PTX_T_F32);
  in = &f->instrs[23];
  assert_int_equal(in->op, PTX_OP_SLCT);
  assert_int_equal(in->type, PTX_T_F32);
  assert_int_equal(in->type2, PTX_T_S32);
  assert_imm(&f->instrs[24].opnd[2], PTX_IMM_INT, 0x7fffffff);
  assert_int_equal(f->instrs[25].mode, PTX_MUL_HI);
  assert_imm(&f->instrs[25].opnd[2], PTX_IMM_INT, -1431655765);
  assert_int_equal(f->instrs[26].mode, PTX_MUL_WIDE);
  in = &f->instrs[27];
  assert_int_equal(in->mode, PTX_MUL_LO);
  assert_int_equal(in->flags, PTX_F_CC);
  assert_int_equal(f->instrs[28].op, PTX_OP_MADC);
  assert_int_equal(f->instrs[28].mode, PTX_MUL_HI);
  assert_imm(&f->instrs[29].opnd[2], PTX_IMM_INT, 8); /* 010 */
  assert_imm(&f->instrs[30].opnd[2], PTX_IMM_INT, 5); /* 0b101 */
  assert_int_equal(f->instrs[30].op, PTX_OP_ADDC);
  assert_int_equal(f->instrs[31].mode, PTX_PRMT_F4E);
  assert_int_equal(f->instrs[32].mode, PTX_MODE_NONE);
  assert_imm(&f->instrs[32].opnd[3], PTX_IMM_INT, 0x3210); /* 0x3210U */
  assert_int_equal(f->instrs[33].num_operands, 5);
  assert_imm(&f->instrs[33].opnd[4], PTX_IMM_INT, 0x96);
  assert_int_equal(f->instrs[34].mode, PTX_SHF_L);
  assert_int_equal(f->instrs[34].flags, 0);
  assert_int_equal(f->instrs[35].mode, PTX_SHF_R);
  assert_int_equal(f->instrs[35].flags, PTX_F_CLAMP);
  assert_int_equal(f->instrs[37].num_operands, 5);
  assert_int_equal(f->instrs[38].flags, PTX_F_SHIFTAMT);
  in = &f->instrs[39];
  assert_int_equal(in->opnd[0].kind, PTX_OPND_VEC);
  assert_int_equal(in->opnd[0].count, 2);
  assert_int_equal(in->opnd[0].elems[1].reg, reg_of(f, "%r23"));
  assert_int_equal(f->instrs[40].opnd[1].kind, PTX_OPND_VEC);
  in = &f->instrs[42];
  assert_int_equal(in->op, PTX_OP_ISSPACEP);
  assert_int_equal(in->space, PTX_SPACE_GLOBAL);
  assert_int_equal(in->type, PTX_T_NONE);
  assert_int_equal(f->instrs[43].mode, PTX_CVTA_FROM);
  assert_int_equal(f->instrs[43].space, PTX_SPACE_SHARED);
  assert_int_equal(f->instrs[45].vec, 4);
  assert_int_equal(f->instrs[45].opnd[1].kind, PTX_OPND_VEC);
  in = &f->instrs[46];
  assert_int_equal(in->opnd[1].kind, PTX_OPND_ADDR);
  assert_int_equal(in->opnd[1].base, PTX_ADDR_NONE);
  assert_int_equal(in->opnd[1].imm, 0x1000);
  ptx_module_free(m);

  /* decimal literals are doubles; negative ones too */
  m = parse_ok(".version 8.0\n.target sm_80\n.address_size 64\n"
               ".visible .entry d()\n{\n.reg .f64 %fd<2>;\n.reg .b64 %rd<2>;\n.reg .b32 %r<2>;\n"
               "mov.f64 %fd1, 1.5;\nmov.f64 %fd1, -2.5e-1;\nmov.u64 %rd1, 18446744073709551615;\n"
               "mov.u64 %rd1, -9223372036854775808;\nmov.u32 %r1, WARP_SZ;\n}\n",
               PTX_PARSE_FULL);
  f = func_of(m, "d");
  double half = 1.5, quarter = -0.25;
  int64_t bits;
  memcpy(&bits, &half, sizeof bits);
  assert_imm(&f->instrs[0].opnd[1], PTX_IMM_DOUBLE, bits);
  memcpy(&bits, &quarter, sizeof bits);
  assert_imm(&f->instrs[1].opnd[1], PTX_IMM_DOUBLE, bits);
  assert_imm(&f->instrs[2].opnd[1], PTX_IMM_INT, -1);
  assert_imm(&f->instrs[3].opnd[1], PTX_IMM_INT, INT64_MIN);
  assert_imm(&f->instrs[4].opnd[1], PTX_IMM_INT, 32);
  ptx_module_free(m);
}

static void assert_bytes(const struct ptx_var *v, const unsigned char *expect, size_t n) {
  assert_non_null(v->init);
  assert_int_equal(v->size, n);
  assert_memory_equal(v->init, expect, n);
}

static void test_module_variables(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(vars_ptx, PTX_PARSE_FULL);
  assert_int_equal(m->num_vars, 14);
  const struct ptx_var *arr = ptx_find_var(m, "arr");
  static const unsigned char arr_bytes[16] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0};
  assert_bytes(arr, arr_bytes, 16);
  assert_int_equal(arr->space, PTX_SPACE_GLOBAL);
  assert_int_equal(arr->align, 4);
  assert_int_equal(arr->line, 5);
  assert_false(arr->is_visible);

  const struct ptx_var *s = ptx_find_var(m, "s");
  assert_int_equal(s->size, 24);
  assert_int_equal(s->num_relocs, 1);
  assert_int_equal(s->relocs[0].offset, 8);
  assert_int_equal(s->relocs[0].var, 0);
  assert_int_equal(s->relocs[0].addend, 4);
  assert_true(s->relocs[0].generic);
  static const unsigned char s_bytes[24] = {7, 0, 0, 0, 0,    0,    0,    0,    0,    0,    0,    0,
                                            0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00, 0x20, 0x40};
  assert_memory_equal(s->init, s_bytes, 16);
  uint64_t third;
  memcpy(&third, s->init + 16, 8);
  assert_int_equal(third, 4620693217682129016u);
  const struct ptx_var *ptr = ptx_find_var(m, "ptr");
  assert_int_equal(ptr->num_relocs, 1);
  assert_int_equal(ptr->relocs[0].addend, 0);
  const struct ptx_var *plain = ptx_find_var(m, "plain");
  assert_int_equal(plain->num_relocs, 1);
  assert_false(plain->relocs[0].generic);

  const struct ptx_var *fv = ptx_find_var(m, "fv");
  assert_true(fv->is_visible);
  assert_int_equal(fv->type, PTX_T_F32);
  static const unsigned char fv_bytes[4] = {0x00, 0x00, 0xA0, 0x3F};
  assert_bytes(fv, fv_bytes, 4);
  static const unsigned char dv_bytes[8] = {0, 0, 0, 0, 0, 0, 0x04, 0xC0};
  assert_bytes(ptx_find_var(m, "dv"), dv_bytes, 8);
  static const unsigned char big_bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
  assert_bytes(ptx_find_var(m, "big"), big_bytes, 8);
  static const unsigned char multi_bytes[24] = {1, 0, 0, 0, 2};
  const struct ptx_var *multi = ptx_find_var(m, "multi");
  assert_int_equal(multi->space, PTX_SPACE_CONST);
  assert_bytes(multi, multi_bytes, 24);
  static const unsigned char counter_bytes[4] = {5, 0, 0, 0};
  assert_bytes(ptx_find_var(m, "counter"), counter_bytes, 4);
  static const unsigned char halves_bytes[6] = {0xff, 0xff, 0xff, 0xff, 7, 0};
  assert_bytes(ptx_find_var(m, "halves"), halves_bytes, 6);
  const struct ptx_var *stat = ptx_find_var(m, "stat");
  assert_int_equal(stat->space, PTX_SPACE_SHARED);
  assert_int_equal(stat->size, 64);
  assert_null(stat->init);
  assert_true(ptx_find_var(m, "dyn")->is_extern);
  static const unsigned char name_bytes[3] = {'h', 'i', 0};
  assert_bytes(ptx_find_var(m, "name"), name_bytes, 3);
  assert_null(ptx_find_var(m, "nothing"));

  const struct ptx_func *k = func_of(m, "k");
  assert_sym(&k->instrs[2].opnd[1], PTX_OPND_SYM, PTX_SCOPE_MODULE, 0, 8);
  assert_sym(&k->instrs[3].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_MODULE, 1, 8);
  ptx_module_free(m);
}

/* The units of an -rdc program linked into one module: a variable declared `.extern` before or
 * after its definition is that one variable, whose initialiser and address instructions use. */
static void test_extern_then_definition(void **state) {
  (void)state;
  static const char text[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                             ".extern .global .align 4 .u32 x;\n"
                             ".extern .global .align 4 .u32 x;\n"
                             ".extern .const .align 4 .b8 table[];\n"
                             ".extern .shared .align 16 .b8 dyn[];\n"
                             ".extern .shared .align 16 .b8 dyn[];\n"
                             ".entry k()\n{\n.reg .b64 %rd<3>;\nmov.u64 %rd1, x;\nmov.u64 %rd2, table;\nret;\n}\n"
                             ".visible .global .align 4 .u32 x = 7;\n"
                             ".visible .const .align 4 .b8 table[8] = {1, 2};\n"
                             ".visible .global .align 8 .u64 y = generic(x);\n"
                             ".extern .global .align 4 .u32 x;\n";
  struct ptx_module *m = parse_ok(text, PTX_PARSE_FULL);
  assert_int_equal(m->num_vars, 4);
  const struct ptx_var *x = ptx_find_var(m, "x");
  assert_false(x->is_extern);
  assert_true(x->is_visible);
  static const unsigned char x_bytes[4] = {7, 0, 0, 0};
  assert_bytes(x, x_bytes, 4);
  const struct ptx_var *table = ptx_find_var(m, "table");
  assert_false(table->is_extern);
  assert_int_equal(table->size, 8);
  assert_true(ptx_find_var(m, "dyn")->is_extern);
  assert_int_equal(ptx_find_var(m, "y")->relocs[0].var, 0);
  const struct ptx_func *k = func_of(m, "k");
  assert_sym(&k->instrs[0].opnd[1], PTX_OPND_SYM, PTX_SCOPE_MODULE, 0, 0);
  assert_sym(&k->instrs[1].opnd[1], PTX_OPND_SYM, PTX_SCOPE_MODULE, 1, 0);
  ptx_module_free(m);
}

static void test_headers_and_prototypes(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(hdr_ptx, PTX_PARSE_FULL);
  assert_int_equal(m->version_major, 9);
  assert_int_equal(m->version_minor, 0);
  assert_int_equal(m->target_sm, 90);
  const struct ptx_func *k = func_of(m, "k");
  assert_param(&k->params[0], "k_param_0", PTX_T_U64, 8, 8); /* .align 16 after .ptr is the pointee's */
  assert_param(&k->params[1], "k_param_1", PTX_T_B8, 24, 8);
  assert_param(&k->params[2], "k_param_2", PTX_T_F64, 8, 8);
  assert_int_equal(k->reqntid[0], 128);
  assert_int_equal(k->reqntid[1], 2);
  assert_int_equal(k->reqntid[2], 1);
  assert_int_equal(k->maxntid[0], 0);
  assert_int_equal(k->maxnreg, 64);
  assert_string_equal(k->regs[0].name, "p");
  assert_string_equal(k->regs[1].name, "q");
  const struct ptx_instr *setp = instr_of(k, "setp.eq.u64 p|q, %rd1, 0");
  assert_reg(&setp->opnd[0], 0);
  assert_int_equal(setp->dest2, 1);
  const struct ptx_instr *bra = instr_of(k, "@p bra $L__done");
  assert_int_equal(bra->guard, 0);
  assert_int_equal(bra->opnd[0].index, index_of(k, "ret"));
  /* an indirect call through a register, with its prototype named after the lists */
  const struct ptx_instr *call = instr_of(k, "call (retval0), %rd1, (param0), prototype_0");
  assert_reg(&call->opnd[0], reg_of(k, "%rd1"));
  assert_int_equal(call->num_call_args, 1);
  assert_int_equal(call->num_call_rets, 1);
  assert_imm(&instr_of(k, "st.param.b32 [param0+0], 1")->opnd[1], PTX_IMM_INT, 1);
  const struct ptx_func *stop = func_of(m, "stop");
  assert_false(stop->is_entry);
  assert_int_equal(stop->num_params, 0);
  assert_int_equal(stop->instrs[0].op, PTX_OP_TRAP);
  ptx_module_free(m);

  m = parse_ok(".version 7.0\n.target sm_52, texmode_independent\n"
               ".entry e()\n{\nexit;\n}\n",
               PTX_PARSE_FULL);
  assert_int_equal(m->target_sm, 52);
  assert_int_equal(m->address_size, 64);
  assert_false(func_of(m, "e")->is_visible);
  ptx_module_free(m);
}

static void test_debug_information(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(dbg_ptx, PTX_PARSE_FULL);
  assert_int_equal(m->num_files, 3);
  assert_null(m->files[0]);
  assert_string_equal(m->files[1], "/src/dbg.cu");
  assert_string_equal(m->files[2], "/usr/include/x.h");
  const struct ptx_func *f = func_of(m, "dbg");
  assert_int_equal(f->num_instrs, 5);
  assert_int_equal(f->instrs[0].loc_file, 1);
  assert_int_equal(f->instrs[0].loc_line, 3);
  const struct ptx_instr *in = &f->instrs[1];
  assert_string_equal(in->text, "mov.u32 %r1, %tid.x");
  assert_int_equal(in->line, 18);
  assert_int_equal(in->column, 2);
  assert_int_equal(in->loc_file, 1);
  assert_int_equal(in->loc_line, 4);
  assert_int_equal(f->instrs[2].loc_file, 2); /* the function_name is left aside, inlined_at kept */
  assert_int_equal(f->instrs[2].loc_line, 110);
  assert_int_equal(f->instrs[2].loc_inlined_file, 1);
  assert_int_equal(f->instrs[2].loc_inlined_line, 4);
  assert_int_equal(f->instrs[0].loc_inlined_file, 0);
  assert_int_equal(f->instrs[3].loc_line, 110);
  assert_int_equal(f->instrs[4].loc_line, 6);
  ptx_module_free(m);

  m = parse_ok(".version 8.0\n.target sm_80\n.address_size 64\n"
               ".entry e()\n{\nret;\n}\n",
               PTX_PARSE_FULL);
  assert_int_equal(func_of(m, "e")->instrs[0].loc_file, 0);
  assert_int_equal(m->num_files, 0);
  ptx_module_free(m);
}

static void test_refused_opcodes_are_recognised(void **state) {
  (void)state;
  struct ptx_module *m = parse_ok(
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry t(.param .u64 t_param_0)\n{\n"
      ".reg .b32 %r<12>;\n.reg .f32 %f<9>;\n.reg .b64 %rd<3>;\n"
      "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];\n"
      "suld.b.2d.b32.trap {%r1}, [%rd1, {%r2, %r3}];\n"
      "wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9}, [%rd1], %r1;\n"
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r2,%r3,%r4,%r5}, {%r2,%r3}, "
      "{%f1,%f2,%f3,%f4};\n"
      "cp.async.ca.shared.global [%r1], [%rd1], 4, 4;\ncp.async.wait_group 0;\n"
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r2, %r3, %r4, %r5}, [%r6];\n}\n",
      PTX_PARSE_FULL);
  const struct ptx_func *f = func_of(m, "t");
  const unsigned ops[] = {PTX_OP_TEX, PTX_OP_SULD, PTX_OP_WMMA, PTX_OP_MMA, PTX_OP_CP, PTX_OP_CP, PTX_OP_LDMATRIX};
  assert_int_equal(f->num_instrs, 7);
  for (size_t i = 0; i < 7; i++) assert_int_equal(f->instrs[i].op, ops[i]);
  for (size_t i = 0; i < 2; i++) assert_int_equal(f->instrs[i].num_operands, 0); /* texture, surface: not decoded */
  /* Matrix instructions: operands and suffixes decoded. */
  assert_int_equal(f->instrs[2].num_operands, 3);
  assert_int_equal(f->instrs[2].opnd[0].count, 8);
  assert_int_equal(f->instrs[2].mx.wop, PTX_WMMA_LOAD);
  assert_int_equal(f->instrs[2].mx.frag, 'a');
  assert_int_equal(f->instrs[2].mx.m, 16);
  assert_int_equal(f->instrs[2].space, PTX_SPACE_GLOBAL);
  assert_int_equal(f->instrs[3].num_operands, 4);
  assert_int_equal(f->instrs[3].mx.k, 16);
  assert_int_equal(f->instrs[3].mx.layouts, 2);
  assert_int_equal(f->instrs[3].mx.num_types, 4);
  assert_int_equal(f->instrs[3].mx.types[1], PTX_T_F16);
  assert_int_equal(f->instrs[6].num_operands, 2);
  assert_int_equal(f->instrs[6].mx.num, 4);
  assert_string_equal(f->instrs[4].text, "cp.async.ca.shared.global [%r1], [%rd1], 4, 4");
  ptx_module_free(m);
}

static void test_declarations_only(void **state) {
  (void)state;
  struct ptx_error err;
  assert_null(ptx_parse(decls_ptx, strlen(decls_ptx), PTX_PARSE_FULL, &err));
  assert_string_equal(err.message, "unknown instruction \"frobnicate.xyz\"");
  struct ptx_module *m = parse_ok(decls_ptx, PTX_PARSE_DECLS);
  assert_int_equal(m->num_funcs, 2);
  const struct ptx_func *w = func_of(m, "weird");
  assert_true(w->has_body && w->is_entry);
  assert_int_equal(w->num_params, 2);
  assert_int_equal(w->params[1].size, 4);
  assert_int_equal(w->num_instrs, 0);
  assert_int_equal(w->num_regs, 0);
  assert_int_equal(func_of(m, "second")->num_params, 0);
  ptx_module_free(m);

  m = parse_ok(warp_ptx, PTX_PARSE_DECLS);
  assert_int_equal(func_of(m, "warp")->num_instrs, 0);
  ptx_module_free(m);
}

static void test_edge_inputs(void **state) {
  (void)state;
  struct ptx_error err;
  struct ptx_module *m = ptx_parse(NULL, 0, PTX_PARSE_FULL, &err);
  assert_non_null(m);
  assert_int_equal(m->num_funcs, 0);
  ptx_module_free(m);
  m = ptx_parse("", 0, PTX_PARSE_DECLS, NULL);
  assert_non_null(m);
  ptx_module_free(m);
  ptx_module_free(NULL);
  /* a NUL ends the text; nothing after it or past size is read */
  static const char with_nul[] = ".version 8.0\n.target sm_80\n\0garbage @@@";
  m = ptx_parse(with_nul, sizeof with_nul, PTX_PARSE_FULL, &err);
  assert_non_null(m);
  ptx_module_free(m);
  static const char cut[] = {'.', 'v', 'e', 'r', 's', 'i', 'o', 'n', ' ', '8', '.', '0'};
  m = ptx_parse(cut, sizeof cut, PTX_PARSE_FULL, &err);
  assert_non_null(m);
  assert_int_equal(m->version_major, 8);
  ptx_module_free(m);
  assert_null(ptx_find_func(NULL, "x"));
  assert_null(ptx_find_var(NULL, "x"));
}

static void test_types_and_names(void **state) {
  (void)state;
  assert_int_equal(ptx_type_size(PTX_T_NONE), 0);
  assert_int_equal(ptx_type_size(PTX_T_PRED), 1);
  assert_int_equal(ptx_type_size(PTX_T_B128), 16);
  assert_int_equal(ptx_type_size(PTX_T_F16X2), 4);
  assert_int_equal(ptx_type_size(PTX_T_F64), 8);
  assert_true(ptx_type_is_signed(PTX_T_S8) && ptx_type_is_signed(PTX_T_S64));
  assert_false(ptx_type_is_signed(PTX_T_U32) || ptx_type_is_signed(PTX_T_F32));
  assert_true(ptx_type_is_float(PTX_T_F16) && ptx_type_is_float(PTX_T_BF16X2) && ptx_type_is_float(PTX_T_F64));
  assert_false(ptx_type_is_float(PTX_T_B32));
  assert_string_equal(ptx_type_name(PTX_T_U32), "u32");
  assert_string_equal(ptx_type_name(PTX_T_BF16X2), "bf16x2");
  assert_string_equal(ptx_op_name(PTX_OP_ADD), "add");
  assert_string_equal(ptx_op_name(PTX_OP_STACKRESTORE), "stackrestore");
  assert_string_equal(ptx_op_name(PTX_OP_GRIDDEPCONTROL), "griddepcontrol");
}

/* 65,536 local arrays, each used: every use finds its own (names of a body are hashed, as the
 * module's are, so this parses in linear time). */
static void test_many_locals(void **state) {
  (void)state;
  enum { N = 65536 };
  size_t cap = (size_t)N * 64 + 1024, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  len += (size_t)snprintf(text + len, cap - len,
                          ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 a7)\n{\n"
                          "  .reg .b64 %%rd<2>;\n");
  for (int i = 0; i < N; i++) len += (size_t)snprintf(text + len, cap - len, "  .local .b8 a%d[%d];\n", i, 1 + i % 3);
  for (int i = N; i-- > 0;) len += (size_t)snprintf(text + len, cap - len, "  mov.u64 %%rd1, a%d;\n", i);
  len += (size_t)snprintf(text + len, cap - len, "  ret;\n}\n");
  struct ptx_module *m = parse_ok(text, PTX_PARSE_FULL);
  const struct ptx_func *k = func_of(m, "k");
  assert_int_equal(k->num_vars, N);
  assert_int_equal(k->num_instrs, N + 1);
  for (int i = 0; i < N; i++) {
    const struct ptx_operand *o = &k->instrs[N - 1 - i].opnd[1];
    if (o->kind != PTX_OPND_SYM || o->scope != PTX_SCOPE_BODY || o->index != (uint32_t)i)
      fail_msg("use of a%d: kind %u scope %u index %u", i, o->kind, o->scope, o->index);
    assert_int_equal(k->vars[i].size, 1 + i % 3);
  }
  ptx_module_free(m);
  free(text);
}

/* Which declaration a name finds: the innermost block's, the outer one's again after it ends,
 * a range of an outer block where the inner one is too short, a parameter over a result. */
static void test_scopes(void **state) {
  (void)state;
  static const char text[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                             ".func (.param .b32 x) f(.param .b32 x, .param .b32 y)\n"
                             "{\n"
                             "  .reg .b32 %r<10>;\n"
                             "  .reg .b32 %r1<3>;\n"
                             "  ld.param.b32 %r1, [x];\n"
                             "  {\n"
                             "    .reg .b32 %r<2>;\n"
                             "    .local .b32 y;\n"
                             "    mov.u32 %r1, %r5;\n"
                             "    ld.local.b32 %r0, [y];\n"
                             "    mov.u32 %r12, %r10;\n"
                             "  }\n"
                             "  mov.u32 %r1, %r5;\n"
                             "  ld.param.b32 %r2, [y];\n"
                             "  ret;\n"
                             "}\n";
  struct ptx_module *m = parse_ok(text, PTX_PARSE_FULL);
  const struct ptx_func *f = func_of(m, "f");
  /* %r0..%r9 are registers 0..9, %r10..%r12 10..12, the inner %r0..%r1 13..14 */
  assert_int_equal(f->num_regs, 15);
  assert_sym(&f->instrs[0].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_PARAM, 0, 0);
  assert_reg(&f->instrs[0].opnd[0], 1);
  assert_reg(&f->instrs[1].opnd[0], 14); /* the inner %r1 */
  assert_reg(&f->instrs[1].opnd[1], 5);  /* the outer range: the inner one stops at %r1 */
  assert_sym(&f->instrs[2].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_BODY, 0, 0);
  assert_reg(&f->instrs[2].opnd[0], 13);
  assert_reg(&f->instrs[3].opnd[0], 12); /* %r1<3>: %r12 is its third */
  assert_reg(&f->instrs[3].opnd[1], 10);
  assert_reg(&f->instrs[4].opnd[0], 1); /* the block has ended */
  assert_reg(&f->instrs[4].opnd[1], 5);
  assert_sym(&f->instrs[5].opnd[1], PTX_OPND_ADDR, PTX_SCOPE_PARAM, 1, 0);
  ptx_module_free(m);
}

/* ---------------------------------------------------------------- errors */

#define HEAD ".version 8.0\n.target sm_80\n.address_size 64\n"
/* The body's first statement is on line 11. */
#define BODY(s)                                                                                                        \
  HEAD ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n.reg .pred %p<2>;\n"                                          \
       ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n" s "}\n"

struct bad {
  const char *text, *message;
  uint32_t line, column;
};

static const struct bad bad_inputs[] = {
    {BODY("add.s32 %r1, %r2, %r3\nret;\n"), "expected ';' after instruction", 12, 1},
    {BODY("foo.bar %r1;\n"), "unknown instruction \"foo.bar\"", 11, 1},
    {BODY("add.xyz.s32 %r1, %r2, %r3;\n"), "unknown modifier \".xyz\" in \"add.xyz.s32\"", 11, 1},
    {BODY("  bra $L__BB0_9;\n"), "undefined label \"$L__BB0_9\"", 11, 7},
    {BODY("mov.u32 %r40, 1;\n"), "register \"%r40\" is not declared", 11, 9},
    {BODY("mov.u64 %rd1, nothing;\n"), "undefined symbol \"nothing\"", 11, 15},
    {BODY("$L1:\n$L1:\nret;\n"), "label \"$L1\" is defined twice", 12, 1},
    {BODY("add.s32 %r1, %r2;\n"), "\"add.s32\" takes 3 operands, not 2", 11, 1},
    {BODY("min.s32 %r1;\n"), "\"min.s32\" takes 3 to 4 operands, not 1", 11, 1},
    {BODY("st.global.u32 %r1, %r2;\n"), "operand 1 of \"st.global.u32\" must be an address", 11, 1},
    {BODY("ld.global.u32 %r1, %rd1;\n"), "operand 2 of \"ld.global.u32\" must be an address", 11, 1},
    {BODY("add.s32 %r1, [%rd1], 1;\n"), "operand 2 of \"add.s32\" cannot be an address", 11, 1},
    {BODY("add.s32 1, %r1, 1;\n"), "the first operand of \"add.s32\" must be a register", 11, 1},
    {BODY("@%r1 ret;\n"), "guard \"%r1\" is not a predicate register", 11, 2},
    {BODY("mov.u32 %r1, %envreg32;\n"), "special register \"%envreg32\" is not supported", 11, 14},
    {BODY("mov.u32 %r1, %tid;\n"), "special register \"%tid\" needs .x, .y or .z", 11, 14},
    {BODY(".reg .v4 .f32 %v;\n"), "vector registers are not supported", 11, 6},
    {BODY(".reg .b32 %r<4>;\n"), "\"%r\" is already declared", 11, 11},
    {BODY("add.s32 %r1|%p1, %r2, %r3;\n"), "\"add.s32\" has no second destination", 11, 12},
    {BODY("cvt.f32 %r1, %r2;\n"), "\"cvt.f32\" needs two types", 11, 1},
    {BODY("barrier.cluster.arrive 0;\n"), "unknown modifier \".cluster\" in \"barrier.cluster.arrive\"", 11, 1},
    {BODY("call.uni;\n"), "expected the called function", 11, 9},
    {BODY("bar.warp 0;\n"), "\"bar.warp\" needs .sync after .warp", 11, 1},
    {BODY("atom.global.u32 %r1, [%rd1], 1;\n"), "\"atom.global.u32\" needs an operation (.add, .cas, ...)", 11, 1},
    {BODY("setp.s32 %p1, %r1, 1;\n"), "\"setp.s32\" needs a comparison", 11, 1},
    {BODY("add %r1, %r2, %r3;\n"), "\"add\" needs a type", 11, 1},
    {BODY("st.const.u32 [%rd1], %r1;\n"), "\"st.const.u32\": constant memory is read-only (PTX has no st.const)", 11,
     1},
    {BODY("atom.const.add.u32 %r1, [%rd1], 1;\n"),
     "\"atom.const.add.u32\": constant memory is read-only (PTX has no atom.const)", 11, 1},
    {BODY("red.const.add.u32 [%rd1], 1;\n"),
     "\"red.const.add.u32\": constant memory is read-only (PTX has no red.const)", 11, 1},
    {BODY("mov.u64 %rd1, 0x1FFFFFFFFFFFFFFFF;\n"), "bad or out-of-range integer \"0x1FFFFFFFFFFFFFFFF\"", 11, 15},
    {BODY("mov.f32 %r1, 0f3F80;\n"), "bad floating-point literal \"0f3F80\"", 11, 14},
    {BODY("mov.u32 %r1, 1 +;\n"), "expected ';' after instruction", 11, 16},
    {BODY(".frob;\n"), "unknown directive \".frob\" in a function body", 11, 1},
    {BODY("ret;\n  /* never closed\n"), "unterminated comment", 12, 3},
    {BODY(".pragma \"nounroll;\n"), "unterminated string", 11, 9},
    {BODY("{\n"), "expected '}' at the end of function \"k\"", 13, 1},
    {HEAD ".address_size 32\n", "32-bit PTX (.address_size 32) is not supported", 4, 15},
    {HEAD ".global .b8 big[2000000000];\n", "\"big\" is too large", 4, 13},
    {HEAD ".global .texref t;\n", "texture, sampler and surface references are not supported", 4, 9},
    {HEAD ".global .u32 x = 1.5;\n", "a decimal fraction cannot initialise a .u32", 4, 18},
    {HEAD ".global .u32 x[2] = {1, 2, 3};\n", "too many initialisers for \"x\"", 4, 28},
    {HEAD ".global .u32 x = generic(y);\n", "undefined symbol \"y\"", 4, 26},
    {HEAD ".global .u32 x = 0;\n.global .u32 x = 0;\n", "\"x\" is already declared", 5, 14},
    {HEAD ".extern .global .u32 x;\n.global .u64 x = 0;\n", "the declaration and the definition of \"x\" do not match",
     5, 14},
    {HEAD ".extern .global .b8 x[4];\n.global .b8 x[8];\n", "the declaration and the definition of \"x\" do not match",
     5, 13},
    {HEAD ".extern .shared .b8 x[];\n.shared .b8 x[8];\n", "\"x\" is already declared", 5, 13},
    {HEAD ".extern .global .u32 x;\n.extern .const .u32 x;\n", "\"x\" is already declared", 5, 21},
    {HEAD ".alias a, b;\n", "unknown directive \".alias\"", 4, 1},
    {HEAD "ret;\n", "unexpected \"ret\" at module scope", 4, 1},
    {HEAD ".func f()\n{\nret;\n}\n.func f()\n{\nret;\n}\n", "function \"f\" is defined twice", 8, 7},
    {HEAD ".func f(.param .b32 a)\n;\n.func f()\n{\nret;\n}\n", "the declarations of \"f\" do not match", 6, 7},
    {HEAD ".extern .func f()\n{\nret;\n}\n", "extern function \"f\" has a body", 4, 15},
    {HEAD ".func f(.param .b32 a)\n;\n.entry k()\n{\ncall.uni f, ();\n}\n",
     "\"f\" takes 1 parameters and 0 results, the call passes 0 and 0", 8, 10},
    {HEAD ".entry k()\n{\ncall.uni g;\n}\n", "undefined function \"g\"", 6, 10},
    {HEAD ".func f(.reg .b32 a)\n;\n", "register parameters (.reg) are not supported", 4, 9},
    {".version 8\n", "bad .version \"8\"", 1, 10},
    {".target sm_xx\n", "unknown target \"sm_xx\"", 1, 9},
    {".file 70000 \"x\"\n", "bad or out-of-range number \"70000\"", 1, 7},
};

static void test_errors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
    const struct bad *b = &bad_inputs[i];
    struct ptx_error err;
    memset(&err, 0x55, sizeof err);
    struct ptx_module *m = ptx_parse(b->text, strlen(b->text), PTX_PARSE_FULL, &err);
    if (m || strcmp(err.message, b->message) != 0 || err.line != b->line || err.column != b->column)
      fail_msg("input %zu: expected %u:%u \"%s\", got %s %u:%u \"%s\"", i, b->line, b->column, b->message,
               m ? "a module" : "", err.line, err.column, m ? "" : err.message);
  }
}

/* Body errors are not seen when bodies are skipped; declaration errors are. */
static void test_errors_in_declarations_mode(void **state) {
  (void)state;
  struct ptx_error err;
  const char *body_error = BODY("foo.bar %r1;\n");
  struct ptx_module *m = ptx_parse(body_error, strlen(body_error), PTX_PARSE_DECLS, &err);
  assert_non_null(m);
  ptx_module_free(m);
  const char *unclosed = BODY("{\n");
  assert_null(ptx_parse(unclosed, strlen(unclosed), PTX_PARSE_DECLS, &err));
  assert_string_equal(err.message, "no '}' closes this function body");
  assert_int_equal(err.line, 7);
  const char *addr32 = HEAD ".address_size 32\n";
  assert_null(ptx_parse(addr32, strlen(addr32), PTX_PARSE_DECLS, &err));
  assert_string_equal(err.message, "32-bit PTX (.address_size 32) is not supported");
  /* function addresses in initialisers: refused in full, left zero in a list of declarations */
  const char *fptr = HEAD ".func f()\n;\n.global .u64 fp = f;\n";
  assert_null(ptx_parse(fptr, strlen(fptr), PTX_PARSE_FULL, &err));
  assert_string_equal(err.message, "the address of function \"f\" in an initialiser is not supported");
  m = ptx_parse(fptr, strlen(fptr), PTX_PARSE_DECLS, &err);
  assert_non_null(m);
  assert_int_equal(m->vars[0].num_relocs, 0);
  ptx_module_free(m);
}

/* ---------------------------------------------------------------- allocation failure */

static void fail_every_allocation(const char *text, enum ptx_parse_mode mode) {
  long n = 0;
  for (;; n++) {
    struct ptx_error err;
    gcap__alloc_fail_after(-1);
    gcap__alloc_fail_after(n);
    struct ptx_module *m = ptx_parse(text, strlen(text), mode, &err);
    gcap__alloc_fail_after(-1);
    if (m) {
      ptx_module_free(m);
      break;
    }
    if (strcmp(err.message, "out of memory") != 0) fail_msg("step %ld: \"%s\"", n, err.message);
    assert_true(n < 100000);
  }
  assert_true(n > 2); /* the scenario did allocate */
}

static void test_allocation_failure(void **state) {
  (void)state;
  const char *texts[] = {calls_ptx, vars_ptx, warp_ptx, dbg_ptx, hdr_ptx};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    fail_every_allocation(texts[i], PTX_PARSE_FULL);
    fail_every_allocation(texts[i], PTX_PARSE_DECLS);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduction_example),
      cmocka_unit_test(test_example_kernels),
      cmocka_unit_test(test_calls_and_blocks),
      cmocka_unit_test(test_warp_atomics_barriers),
      cmocka_unit_test(test_math_memory_literals),
      cmocka_unit_test(test_module_variables),
      cmocka_unit_test(test_extern_then_definition),
      cmocka_unit_test(test_headers_and_prototypes),
      cmocka_unit_test(test_debug_information),
      cmocka_unit_test(test_refused_opcodes_are_recognised),
      cmocka_unit_test(test_declarations_only),
      cmocka_unit_test(test_edge_inputs),
      cmocka_unit_test(test_types_and_names),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_errors_in_declarations_mode),
      cmocka_unit_test(test_allocation_failure),
      cmocka_unit_test(test_many_locals),
      cmocka_unit_test(test_scopes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
