#!/usr/bin/env python3
"""No test passes by skipping on its own: a test that needs a server, a
tool, root or a kernel feature asks `redoctor_testkit::skip_if_missing`,
which fails under REDOCTOR_REQUIRE_ALL=1 (set by .ci/run). This finds the
other ways of saying "skipped" and returning: a print that mentions a skip
in any test source. A branch on a property of the host or the load (not a
missing requirement) says so in a `// skip-ok: why` comment on the line
before. Prints each; exit 1 if there is one.
"""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PRINT_SKIP = re.compile(r"(e?print(ln)?!|say!)\s*\(\s*\"[^\"]*\bskip", re.I)


def main():
    bad = []
    files = [f for f in glob.glob(os.path.join(ROOT, "**", "*.rs"), recursive=True)
             if "/target/" not in f and "/common/testkit/" not in f]
    for f in files:
        src = open(f).read()
        in_tests = "/tests/" in f or "#[cfg(test)]" in src
        if not in_tests:
            continue
        lines = src.splitlines()
        for n, line in enumerate(lines, 1):
            if PRINT_SKIP.search(line) and not (n > 1 and "skip-ok:" in lines[n - 2]):
                bad.append(f"{os.path.relpath(f, ROOT)}:{n}: {line.strip()} "
                           "(use redoctor_testkit::skip_if_missing)")
    for b in bad:
        print(b)
    print(f"{len(files)} sources checked, {len(bad)} tests that skip on their own")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
