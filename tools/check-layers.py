#!/usr/bin/env python3
"""Checks that the folders of src/ depend one way, each entered through its own header.

Every #include "folder/header.h" that crosses from one folder of src/ into another must go to a
folder the first may use (LAYERS) and name one of that folder's entry headers (ENTRIES); an
include inside a folder names its header bare. A PUBLIC_ONLY folder (the runtime stand-in) uses no
other folder and includes gcap only as its users do, <gcap/*.h> from include/. Prints each
violation; exits 1 when there is one.
  check-layers.py [--graph]   (--graph prints the folders and what each uses)
"""
import os
import re
import sys

# What each folder may include from, lowest layer first. A folder never uses one below it in
# this list's reverse: the graph has no circle, so no folder is called back into.
LAYERS = {
    "base": [],
    "ptx": ["base"],
    "core": ["base", "ptx"],
    "io": ["base", "core"],
    "backend_sim/ptx": ["base", "ptx", "core"],
    "backend_sim": ["base", "core", "backend_sim/ptx"],
    "backend_cuda": ["base", "core"],
    # The runtime stand-in uses gcap only through its public headers (PUBLIC_ONLY), like the bindings.
    "cudart": [],
}

# The headers through which other folders enter each folder.
ENTRIES = {
    "base": {"alloc.h", "arena.h", "error.h", "registry.h"},
    "ptx": {"ptx.h"},
    "core": {"backend.h", "core.h"},
    "io": set(),
    "backend_sim/ptx": {"ptx_exec.h"},
    "backend_sim": set(),
    "backend_cuda": set(),
    "cudart": set(),
}

# Folders that may include gcap only as its users do: <gcap/*.h> from include/, nothing of src/.
PUBLIC_ONLY = {"cudart"}

# Headers the build generates into a folder's build directory (meson custom targets).
GENERATED = {"cudart": {"errors_table.h"}}

# The only core header a backend or the executor may use: the ops table it implements.
BACKEND_ENTRY = {"backend_sim": {"backend.h"}, "backend_sim/ptx": {"backend.h"}, "backend_cuda": {"backend.h"}}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)


def folder_of(path):
    rel = os.path.relpath(os.path.dirname(path), "src").replace(os.sep, "/")
    return rel


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    problems = []
    seen = []
    for layer, below in LAYERS.items():  # each layer uses only layers listed before it: no circle
        problems += [f"tools/check-layers.py: src/{layer} uses src/{b}, which is not listed before it"
                     for b in below if b not in seen]
        seen.append(layer)
    uses = {}
    for dirpath, _, names in os.walk("src"):
        for name in sorted(names):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            here = folder_of(path)
            if here not in LAYERS:
                problems.append(f"{path}: folder src/{here} is not a known layer (add it to tools/check-layers.py)")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if here in PUBLIC_ONLY:
                for target in SYSTEM_INCLUDE.findall(text):
                    top = target.split("/", 1)[0]
                    if top == "gcap" and not os.path.exists(os.path.join("include", target)):
                        problems.append(f"{path}: <{target}> is not a public header of include/gcap")
                    elif "/" in target and (top in LAYERS or os.path.isdir(os.path.join("src", top))):
                        problems.append(f"{path}: src/{here} uses gcap only through include/gcap, not <{target}>")
            for target in INCLUDE.findall(text):
                if "/" not in target:
                    if not os.path.exists(os.path.join(dirpath, target)) and target not in GENERATED.get(here, ()):
                        problems.append(f'{path}: "{target}" is not in src/{here}; name its folder')
                    continue
                there, header = target.rsplit("/", 1)
                if there == here:
                    problems.append(f'{path}: "{target}" is in its own folder; include it bare')
                    continue
                if there not in LAYERS:
                    problems.append(f'{path}: "{target}" is in no layer')
                    continue
                uses.setdefault(here, set()).add(there)
                if there not in LAYERS[here]:
                    problems.append(f"{path}: src/{here} may not use src/{there} ({target})")
                allowed = BACKEND_ENTRY.get(here, {}) if there == "core" and here in BACKEND_ENTRY else ENTRIES[there]
                if header not in allowed:
                    problems.append(f"{path}: {target} is not an entry header of src/{there} "
                                    f"(use one of: {', '.join(sorted(allowed)) or 'none'})")
    if "--graph" in sys.argv[1:]:
        for layer in LAYERS:
            print(f"src/{layer}: {', '.join('src/' + u for u in sorted(uses.get(layer, ()))) or '-'}")
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers.py: {len(problems)} include(s) cross the layers the wrong way", file=sys.stderr)
        return 1
    print(f"check-layers.py: the {len(LAYERS)} folders of src/ depend one way, through their entry headers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
