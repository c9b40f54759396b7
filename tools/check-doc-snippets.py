#!/usr/bin/env python3
"""Every ```c block of the documentation compiles, or quotes a file that the build compiles.

    check-doc-snippets.py --root SRCDIR --cc CC [-I DIR]... FILE.md|DIR...

A directory stands for the .md files in it.

The line right before each ```c fence is an HTML comment (invisible once rendered) that says
how the block is checked:

    <!-- check: quote examples/fork_join.c -->
        The block's lines appear, in order and consecutively, in that file (indentation is
        ignored; a line "..." or "/* ... */" stands for any number of lines).
    <!-- check: file -->
        The block is a translation unit: it compiles after gcap's headers and the usual C ones.
    <!-- check: statements
    extern gcap_stream *s0;
    -->
        The block is a function body; the comment's other lines come first, at file scope, and
        declare what it uses.
    <!-- check: skip REASON -->
        Not compiled, for code that needs what the build does not have (the CUDA toolkit's
        libraries); the reason is required.

A block without such a comment fails the check. Exit status: 0 when every block passes, 1
when one fails or when no block is found at all.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HEADERS = """#define _POSIX_C_SOURCE 200809L
#include <gcap/gcap.h>
#include <gcap/sim.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
"""
ELLIPSIS = {"...", "/* ... */"}


def is_ellipsis(line):
    """"..." or a comment "/* ... what was left out ... */" stands for any number of lines."""
    return line in ELLIPSIS or (line.startswith("/* ...") and line.endswith("... */"))


def blocks(path):
    """Yields (line number, marker text, block lines) for each ```c block of a Markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```c":
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            yield i + 1, marker_before(lines, i), lines[i + 1:end]
            i = end
        i += 1


def marker_before(lines, fence):
    """The text of the <!-- check: ... --> comment that ends on the line before the fence."""
    if fence == 0 or not lines[fence - 1].rstrip().endswith("-->"):
        return None
    start = fence - 1
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    text = "\n".join(lines[start:fence]).strip()
    m = re.match(r"<!--\s*check:\s*(.*?)\s*-->$", text, re.S)
    return m.group(1) if m else None


def quoted(block, path):
    """None when block appears in path (see the module's text), else why not."""
    if not os.path.isfile(path):
        return f"{path} does not exist"
    text = [l.strip() for l in open(path, encoding="utf-8").read().split("\n")]
    want = [l.strip() for l in block]
    for start in range(len(text)):
        if matches_at(want, text, start):
            return None
    first = next((w for w in want if w and not is_ellipsis(w)), "")
    return f"not a quote of {path} (first line: {first!r})"


def matches_at(want, text, pos):
    if not want:
        return True
    if is_ellipsis(want[0]):
        return any(matches_at(want[1:], text, p) for p in range(pos, len(text) + 1))
    return pos < len(text) and text[pos] == want[0] and matches_at(want[1:], text, pos + 1)


def compiled(source, args):
    """None when source compiles with warnings as errors, else the compiler's output."""
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(source)
        name = f.name
    cmd = [args.cc, "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-Wno-unused",
           "-Wno-unused-parameter", "-fsyntax-only"] + [f"-I{d}" for d in args.include] + [name]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(name)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()


def check(marker, block, args):
    """None when the block passes, else why it does not."""
    if marker is None:
        return "no <!-- check: ... --> comment on the line before the fence"
    kind, rest = re.match(r"(\S+)\s*(.*)", marker, re.S).groups()
    body = "\n".join(block)
    if kind == "quote":
        return quoted(block, os.path.join(args.root, rest.strip()))
    if kind == "file":
        return compiled(HEADERS + "#line 1 \"snippet\"\n" + body + "\n", args)
    if kind == "statements":
        return compiled(HEADERS + rest + "\nvoid doc_snippet(void);\nvoid doc_snippet(void) {\n#line 1 \"snippet\"\n"
                        + body + "\n}\n", args)
    if kind == "skip":
        return None if rest.strip() else "skip needs a reason"
    return f"unknown check {kind!r}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--cc", default=os.environ.get("CC", "cc"))
    p.add_argument("-I", dest="include", action="append", default=[])
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    failed = total = 0
    files = []
    for f in args.files:
        files += sorted(glob.glob(os.path.join(f, "*.md"))) if os.path.isdir(f) else [f]
    for md in files:
        for line, marker, block in blocks(md):
            total += 1
            why = check(marker, block, args)
            if why:
                failed += 1
                print(f"{md}:{line}: {why}")
    print(f"{total - failed} of {total} C blocks pass")
    if total == 0:  # a path or a pattern gone wrong would otherwise pass unseen
        print("no C block found: nothing was checked")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
