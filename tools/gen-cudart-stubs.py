#!/usr/bin/env python3
"""Writes the stand-in runtime's stubs and linker version script from its export list.

Every name of src/cudart/exports.txt that no source of src/cudart defines becomes a function with
C linkage that says once on stderr that gcap does not support it and returns
cudaErrorNotSupported. The version script gives every exported name the version node
libcudart.so.13 and keeps everything else local.
  gen-cudart-stubs.py EXPORTS STUBS.c VERSION_SCRIPT SOURCE.c...
  gen-cudart-stubs.py --list EXPORTS SOURCE.c...   prints "implemented NAME" / "stub NAME" lines
  gen-cudart-stubs.py --doc [--check] DOC.md EXPORTS SOURCE.c...
      rewrites (or, with --check, compares) the support table between DOC.md's markers
      <!-- cudart-support-table --> and <!-- /cudart-support-table -->

A stub is declared `int name(void)` whatever the runtime's signature: the caller's arguments
(in registers or on its own stack frame, System V ABI) are simply not read, and the int in eax
is what a caller of a cudaError_t function reads; every function whose result is a pointer is
implemented.
"""
import re
import sys



def read_names(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


# A definition at the start of a line: a return type, the name, its parameters, then a body.
DEFINITION = re.compile(r"^[A-Za-z_][\w \t*]*?\b((?:__)?cuda\w+)\s*\(", re.MULTILINE)


def defined_names(paths):
    """The cuda* / __cuda* functions the sources define (a declaration ends in ';', a definition's
    parameter list is followed by '{')."""
    names = set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in DEFINITION.finditer(text):
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            rest = text[i:].lstrip()
            if rest.startswith("{"):
                names.add(m.group(1))
    return names


def list_support(argv):
    exports = read_names(argv[0])
    implemented = defined_names(argv[1:])
    for n in exports:
        print(("implemented " if n in implemented else "stub ") + n)
    return 0


# The families of the support table, by name prefix, first match wins.
FAMILIES = [
    ("Registration and launch (`__cuda*`)", ("__cuda",)),
    ("Executable graphs", ("cudaGraphExec", "cudaGraphInstantiate", "cudaGraphLaunch", "cudaGraphUpload",
                           "cudaGraphNodeSetEnabled", "cudaGraphNodeGetEnabled", "cudaDeviceGraphMem",
                           "cudaDeviceGetGraphMem", "cudaDeviceSetGraphMem")),
    ("Graphs and nodes", ("cudaGraph", "cudaUserObject")),
    ("Streams and capture", ("cudaStream", "cudaThreadExchangeStreamCaptureMode", "cudaLaunchHostFunc")),
    ("Events", ("cudaEvent",)),
    ("Memory pools", ("cudaMemPool", "cudaMallocAsync", "cudaFreeAsync", "cudaMallocFromPoolAsync",
                      "cudaDeviceGetDefaultMemPool", "cudaDeviceGetMemPool", "cudaDeviceSetMemPool")),
    ("Memory", ("cudaMalloc", "cudaFree", "cudaMem", "cudaHost", "cudaPointer", "cudaGetSymbol", "cudaArray",
                "cudaMipmapped")),
    ("Kernels", ("cudaLaunch", "cudaFunc", "cudaOccupancy", "cudaGetKernel", "cudaKernel", "cudaGetFunc")),
    ("Device and version", ("cudaDevice", "cudaGetDevice", "cudaSetDevice", "cudaDriverGetVersion",
                            "cudaRuntimeGetVersion", "cudaInitDevice", "cudaChooseDevice", "cudaSetValidDevices",
                            "cudaThread")),
    ("Errors", ("cudaGetLastError", "cudaPeekAtLastError", "cudaGetError")),
    ("Other", ("",)),
]


def support_table(exports, implemented):
    rows = {title: ([], []) for title, _ in FAMILIES}
    for name in exports:
        title = next(t for t, prefixes in FAMILIES if name.startswith(prefixes))
        rows[title][0 if name in implemented else 1].append(name)
    total = sum(1 for n in exports if n in implemented)
    lines = [f"{total} of the {len(exports)} exported functions are implemented; the others return "
             "`cudaErrorNotSupported`.", "",
             "| functions | implemented | not supported |", "|---|---|---|"]
    for title, _ in FAMILIES:
        done, stubs = rows[title]
        if not done and not stubs:
            continue
        lines.append(f"| {title} | {', '.join(f'`{n}`' for n in done) or '—'} | "
                     f"{', '.join(f'`{n}`' for n in stubs) or '—'} |")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- cudart-support-table -->\n", "<!-- /cudart-support-table -->"


def doc_table(argv):
    check = argv[0] == "--check"
    if check:
        argv = argv[1:]
    doc = argv[0]
    table = support_table(read_names(argv[1]), defined_names(argv[2:]))
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"gen-cudart-stubs.py: {doc} lacks the markers {BEGIN.strip()} and {END}", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    old, tail = rest.split(END, 1)
    if check:
        if old != table:
            print(f"gen-cudart-stubs.py: the support table of {doc} is out of date; regenerate it with "
                  "tools/gen-cudart-stubs.py --doc docs/cudart.md src/cudart/exports.txt src/cudart/*.c",
                  file=sys.stderr)
            return 1
        return 0
    with open(doc, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + table + END + tail)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "--list":
        return list_support(argv[2:])
    if len(argv) >= 5 and argv[1] == "--doc":
        return doc_table(argv[2:])
    if len(argv) < 4:
        print("usage: gen-cudart-stubs.py EXPORTS STUBS.c VERSION_SCRIPT SOURCE.c...", file=sys.stderr)
        return 2
    exports = read_names(argv[1])
    implemented = defined_names(argv[4:])
    if len(set(exports)) != len(exports):
        print(f"gen-cudart-stubs.py: {argv[1]} lists a name twice", file=sys.stderr)
        return 1
    stubs = [n for n in exports if n not in set(implemented)]
    out = ["/* Generated by tools/gen-cudart-stubs.py from src/cudart/exports.txt; do not edit. */",
           '#include <stddef.h>', "",
           "/* unsupported.c; the runtime's own header is not included: it declares the real signatures. */",
           "int gcap__cudart_unsupported(unsigned char *said, const char *name);", "", f"static unsigned char said[{max(len(stubs), 1)}];", ""]
    for i, name in enumerate(stubs):
        out.append(f"int {name}(void);")
        out.append(f'int {name}(void) {{ return gcap__cudart_unsupported(&said[{i}], "{name}"); }}')
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    with open(argv[3], "w", encoding="utf-8") as f:
        f.write("/* Generated by tools/gen-cudart-stubs.py from src/cudart/exports.txt; do not edit. */\n")
        f.write("libcudart.so.13 {\n  global:\n")
        f.writelines(f"    {n};\n" for n in exports)
        f.write("  local:\n    *;\n};\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
