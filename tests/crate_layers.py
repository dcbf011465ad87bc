#!/usr/bin/env python3
"""Folders follow the dependencies: a crate depends only on crates in its own
layer or a lower one, so the folder the others observe (the engine) never
sits on top of them.

    common/  <  engine/  <  probes/  <  advisor/  <  agent/

(`[dependencies]` and `[build-dependencies]`; dev-dependencies may reach
up for tests, e.g. the probes' live tests run the engine). Also: the
advisor links no aya (it reads the probes' data types from
`common/probes-common`), and no crate uses `#[macro_use] extern crate`.
Prints each violation; exit 1 if there is one.
"""
import glob
import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LAYERS = ["common", "engine", "probes", "advisor", "agent"]


def layer(folder):
    return LAYERS.index(os.path.relpath(folder, ROOT).split(os.sep)[0])


def main():
    bad = []
    manifests = [m for m in glob.glob(os.path.join(ROOT, "**", "Cargo.toml"), recursive=True)
                 if "/target/" not in m and os.path.dirname(m) != ROOT]
    for m in manifests:
        crate = os.path.dirname(m)
        doc = tomllib.load(open(m, "rb"))
        for section in ("dependencies", "build-dependencies"):
            for name, spec in doc.get(section, {}).items():
                if isinstance(spec, dict) and "path" in spec:
                    dep = os.path.normpath(os.path.join(crate, spec["path"]))
                    if layer(dep) > layer(crate):
                        bad.append(f"{os.path.relpath(crate, ROOT)} depends on "
                                   f"{os.path.relpath(dep, ROOT)} ({section}): a lower layer "
                                   f"may not depend on a higher one ({' < '.join(LAYERS)})")
    tree = subprocess.run(
        ["cargo", "tree", "--offline", "-p", "redoctor-advisor", "-e", "normal,build",
         "--prefix", "none"],
        cwd=ROOT, capture_output=True, text=True)
    if tree.returncode != 0:
        bad.append(f"cargo tree -p redoctor-advisor failed: {tree.stderr.strip()[-300:]}")
    elif re.search(r"^aya", tree.stdout, re.M):
        bad.append("redoctor-advisor links aya (cargo tree -p redoctor-advisor); read the "
                   "probes' data types from redoctor-probes-common instead")
    for src in glob.glob(os.path.join(ROOT, "**", "*.rs"), recursive=True):
        if "/target/" in src:
            continue
        if re.search(r"#\[macro_use\]\s*extern crate", open(src).read()):
            bad.append(f"{os.path.relpath(src, ROOT)}: #[macro_use] extern crate "
                       f"(import the macro with `use`)")
    for b in bad:
        print(b)
    print(f"{len(manifests)} crates checked, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
