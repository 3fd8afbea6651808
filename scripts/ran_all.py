#!/usr/bin/env python3
"""Whether every privileged test ran: the tests marked `#[ignore = "needs root..."]` in the
sources, against the output of the `cargo test -- --ignored needs_root::` run that should have
run them all.

A privileged test is ignored in a plain `cargo test`, so a machine without root lists it as
ignored instead of passing it unrun. CI runs them as root; this check fails the run if fewer
passed than the sources declare (one was renamed out of its `needs_root` module, or the filter
missed it), if any failed, or if none were found at all.

    python3 scripts/ran_all.py OUTPUT [ROOT]

OUTPUT is the test run's captured output; ROOT (default `.`) the tree whose `.rs` files are
counted (`target`, `vendor` and hidden folders left out).
"""

import os
import re
import sys

MARKER = re.compile(r'^\s*#\[ignore\s*=\s*"needs root')
RESULT = re.compile(r"^test (\S*needs_root::\S+) \.\.\. (ok|FAILED|ignored)\b", re.M)
SKIP = {"target", "vendor", "node_modules"}


def declared(root):
    """(count, [file:line]) of the privileged tests in the sources under `root`."""
    places = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith("."))
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as file:
                for number, line in enumerate(file, 1):
                    if MARKER.search(line):
                        places.append(f"{os.path.relpath(path, root)}:{number}")
    return len(places), places


def outcomes(output):
    """{test path: outcome} of the privileged tests the run printed."""
    return {name: outcome for name, outcome in RESULT.findall(output)}


def verdict(output, root):
    """The lines to print, and whether the run holds."""
    count, places = declared(root)
    seen = outcomes(output)
    passed = sorted(name for name, outcome in seen.items() if outcome == "ok")
    failed = sorted(name for name, outcome in seen.items() if outcome != "ok")
    lines = [f"privileged tests: {count} declared, {len(passed)} passed, {len(failed)} not"]
    lines += [f"  passed: {name}" for name in passed]
    lines += [f"  NOT PASSED ({seen[name]}): {name}" for name in failed]
    holds = count > 0 and not failed and len(passed) >= count
    if count == 0:
        lines.append("  no test is marked #[ignore = \"needs root...\"]: nothing was checked")
    elif len(passed) < count:
        lines.append(f"  {count - len(passed)} declared test(s) did not run; declared at:")
        lines += [f"    {place}" for place in places]
    return lines, holds


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8", errors="replace") as file:
        output = file.read()
    lines, holds = verdict(output, sys.argv[2] if len(sys.argv) > 2 else ".")
    print("\n".join(lines))
    sys.exit(0 if holds else 1)


if __name__ == "__main__":
    main()
