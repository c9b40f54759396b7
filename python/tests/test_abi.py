"""Every ctypes Structure of gcap._lib is its C struct, gcap_<name>: the same fields in the same order
(read from the public headers), and the same size, alignment, offsets and field sizes (printed by a C program
compiled against them). A struct shorter in Python than in C lets the library write past it."""
import ctypes
import os
import re
import shutil
import subprocess

import pytest

from gcap import _lib

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
INCLUDE = os.path.join(ROOT, "include")
HEADERS = ["gcap/gcap.h", "gcap/sim.h"]


def mirrored():
    """(C name, ctypes class) of every Structure and Union the binding declares."""
    out = []
    for name, value in vars(_lib).items():
        if (isinstance(value, type) and issubclass(value, (ctypes.Structure, ctypes.Union))
                and value.__module__ == _lib.__name__):
            out.append(("gcap_" + name, value))
    return sorted(out, key=lambda x: x[0])


def header_text():
    if not all(os.path.exists(os.path.join(INCLUDE, h)) for h in HEADERS):
        pytest.skip("the public headers are not in this tree (%s)" % os.path.abspath(INCLUDE))
    text = "\n".join(open(os.path.join(INCLUDE, h)).read() for h in HEADERS)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def c_fields(text, cname):
    """The member names of `typedef struct|union cname { ... } cname;`, in order."""
    m = re.search(r"typedef\s+(?:struct|union)\s+%s\s*\{(.*?)\}\s*%s\s*;" % (cname, cname), text, re.S)
    assert m, "%s is not defined in %s" % (cname, ", ".join(HEADERS))
    names = []
    for decl in m.group(1).split(";"):
        if not decl.strip():
            continue
        for declarator in decl.split(","):
            declarator = re.sub(r"\[[^\]]*\]", "", declarator)
            names.append(re.findall(r"[A-Za-z_]\w*", declarator)[-1])
    return names


def test_the_binding_mirrors_the_structs_it_passes():
    names = [c for c, _ in mirrored()]
    for cname in ("gcap_module_desc", "gcap_sim_options", "gcap_sim_stats", "gcap_kernel_def",
                  "gcap_context_options", "gcap_kernel_node_params"):
        assert cname in names


def test_fields_and_their_order_match_the_headers():
    text = header_text()
    for cname, cls in mirrored():
        assert [f[0] for f in cls._fields_] == c_fields(text, cname), cname


def test_sizes_alignments_and_offsets_match_a_c_compiler(tmp_path):
    header_text()
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler (cc, gcc, clang or $CC) to compile the layout probe with")
    lines = ["#include <gcap/gcap.h>", "#include <gcap/sim.h>", "#include <stdalign.h>", "#include <stddef.h>",
             "#include <stdio.h>", "int main(void) {"]
    for cname, cls in mirrored():
        lines.append('  printf("%s %%zu %%zu\\n", sizeof(%s), alignof(%s));' % (cname, cname, cname))
        for field in cls._fields_:
            lines.append('  printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (cname, field[0], cname, field[0], cname, field[0]))
    lines += ["  return 0;", "}"]
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text("\n".join(lines) + "\n")
    built = subprocess.run([cc, "-std=c11", "-I", INCLUDE, "-o", str(exe), str(src)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    c = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        key, *values = line.split()
        c[key] = tuple(int(v) for v in values)
    for cname, cls in mirrored():
        assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == c[cname], cname
        for field in cls._fields_:
            f = getattr(cls, field[0])
            assert (f.offset, f.size) == c[cname + "." + field[0]], "%s.%s" % (cname, field[0])
