#!/usr/bin/env python3
"""Whether every test ARCHITECTURE.md names as holding an invariant exists: each
`path/to/file.rs::test_name` (or `...::module::test_name`) in the file must name a `.rs` file
of the repository that defines `fn test_name` inside `mod module` if one is named.

    python3 scripts/invariants.py [ARCHITECTURE.md]

Prints each name it cannot find and exits 1 if there is one, or if the file names no test.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAMED = re.compile(r"`([\w./-]+\.rs)((?:::\w+)+)`")


def named_tests(text):
    """[(file, [modules], test)] named in `text`."""
    found = []
    for path, tail in NAMED.findall(text):
        parts = tail.strip(":").split("::")
        found.append((path, parts[:-1], parts[-1]))
    return found


def defined(root, path, modules, test):
    """Whether `path` under `root` defines `fn test`, inside `mod m` for each of `modules`."""
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return False
    with open(full, encoding="utf-8") as file:
        text = file.read()
    for module in modules:
        at = re.search(rf"\bmod\s+{module}\s*\{{", text)
        if not at:
            return False
        text = text[at.end():]
    return re.search(rf"\bfn\s+{test}\s*\(", text) is not None


def missing(doc, root):
    """The names in `doc` that name no test, and how many were named."""
    with open(doc, encoding="utf-8") as file:
        named = named_tests(file.read())
    absent = [
        f"{path}::{'::'.join(modules + [test])}"
        for path, modules, test in named
        if not defined(root, path, modules, test)
    ]
    return absent, len(named)


def main():
    doc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "ARCHITECTURE.md")
    absent, count = missing(doc, os.path.dirname(os.path.abspath(doc)))
    for name in absent:
        print(f"no such test: {name}")
    print(f"{os.path.basename(doc)}: {count} tests named, {len(absent)} not found")
    sys.exit(1 if absent or count == 0 else 0)


if __name__ == "__main__":
    main()
