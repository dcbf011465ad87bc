#!/usr/bin/env python3
"""Fails when two modules of a crate import each other, directly or round a
loop: in every directory of a crate's `src/`, the sibling modules (files and
subdirectories) and what each one's code names of the others (`crate::a`,
`super::a`, `crate::{a, b}`, `super::{a, ..}`), comments and `#[cfg(test)]
mod tests` left out. A parent and its own child modules may use each other
(that is what a module and its parts are); siblings may not both ways.

Usage: tests/module_cycles.py [CRATE_SRC ...]   (default: every crate of the
workspace). Prints each loop found with the edges that make it; exit 1 if
there is one.
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# Every crate of the workspace: each directory under the root with a
# Cargo.toml and a src/ (found, not listed, so a new crate is not missed).
CRATES = sorted(
    os.path.relpath(d, ROOT)
    for d, _, files in os.walk(ROOT)
    if "Cargo.toml" in files and d != ROOT and "/target" not in d and "/." not in d
    and os.path.isdir(os.path.join(d, "src"))
)


def code(path):
    src = re.sub(r"//[^\n]*", "", open(path).read())
    cut = src.find("#[cfg(test)]\nmod tests")
    return src if cut < 0 else src[:cut]


def names_used(src, prefix):
    """Module names `src` reaches under `prefix` (e.g. `crate::` or `super::`)."""
    p = re.escape(prefix)
    found = set(re.findall(p + r"([a-z_][a-z0-9_]*)\b", src))
    for group in re.findall(p + r"\{([^}]*)\}", src):
        found |= set(re.findall(r"(?:^|[,\s{])([a-z_][a-z0-9_]*)(?=::|\s*[,}]|\s*$)", group))
    return found


def loops_in(src_root):
    out = []
    for d, dirs, files in os.walk(src_root):
        dirs[:] = [x for x in dirs if x != "tests"]
        rel = os.path.relpath(d, src_root)
        modpath = "" if rel == "." else rel.replace("/", "::")
        kids = {}
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if f.endswith(".rs") and f not in ("mod.rs", "lib.rs", "main.rs"):
                kids[f[:-3]] = [p]
            elif os.path.isdir(p) and f != "tests":
                kids[f] = [os.path.join(a, x) for a, _, xs in os.walk(p) for x in xs if x.endswith(".rs")]
        deps = {}
        for k, paths in kids.items():
            used = set()
            for p in paths:
                src = code(p)
                # How many `super::` lead from this file to the directory `d`.
                depth = os.path.relpath(p, d).count("/") + (0 if p.endswith("mod.rs") else 1)
                used |= names_used(src, "super::" * depth)
                used |= names_used(src, "crate::" + (modpath + "::" if modpath else ""))
            deps[k] = {u for u in used if u in kids and u != k}

        def path(a, b, seen):
            if a == b:
                return [b]
            for n in sorted(deps.get(a, ())):
                if n not in seen:
                    seen.add(n)
                    rest = path(n, b, seen)
                    if rest:
                        return [a] + rest
            return None

        done = set()
        for a in sorted(deps):
            for b in sorted(deps[a]):
                back = path(b, a, {b})
                if back and frozenset(back) not in done:
                    done.add(frozenset(back))
                    where = os.path.relpath(d, ROOT)
                    out.append(f"{where}: {' -> '.join([a] + back)}")
    return out


def main():
    roots = sys.argv[1:] or [os.path.join(ROOT, c, "src") for c in CRATES]
    loops = [l for r in roots for l in loops_in(r)]
    for l in loops:
        print(f"module import loop: {l}")
    if loops:
        print("break each loop: move what both sides need into a module of its own, "
              "or make the part a child of the module it extends", file=sys.stderr)
        return 1
    print(f"module import loops: none in {len(roots)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
