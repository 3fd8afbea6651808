#!/usr/bin/env python3
"""Whether every prdoc is well formed: named `pr_NNNN.prdoc` with numbers running from 0001
without a gap, YAML that parses, a `title`, a `doc` list of `audience` and `description`
entries, and a `crates` list whose every `name` is a crate of this repository (a workspace
member, a vendored crate, or a crate of `interop/`, `zombienet/` or `tools/`) with a `bump` of
none, patch, minor or major.

    python3 scripts/prdoc.py [ROOT]

Prints each problem and exits 1 if there is one. Needs PyYAML (`pip install pyyaml`).
"""

import os
import re
import sys

try:
    import yaml
except ImportError:
    sys.exit("scripts/prdoc.py needs PyYAML: pip install pyyaml")

NAME = re.compile(r"^pr_(\d{4})\.prdoc$")
BUMPS = {"none", "patch", "minor", "major"}
# polkadot-sdk's audiences, and app developers (the JSON-RPC's users), which this project has too.
AUDIENCES = {"App Developer", "Node Dev", "Node Operator", "Runtime Dev", "Runtime User", "Todo"}


def crate_names(root):
    """The package names of every Cargo.toml under `root` (`target` left out)."""
    names = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in {"target", "node_modules"} and not d.startswith(".")]
        if "Cargo.toml" in files:
            with open(os.path.join(folder, "Cargo.toml"), encoding="utf-8") as file:
                text = file.read()
            package = re.search(r"^\[package\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
            if package:
                name = re.search(r'^name\s*=\s*"([^"]+)"', package.group(1), re.M)
                if name:
                    names.add(name.group(1))
    return names


def problems(root):
    """Every problem found in `root`'s prdoc folder."""
    folder = os.path.join(root, "prdoc")
    crates = crate_names(root)
    found = []
    numbers = []
    for entry in sorted(os.listdir(folder)):
        match = NAME.match(entry)
        if not match:
            found.append(f"{entry}: not named pr_NNNN.prdoc")
            continue
        numbers.append(int(match.group(1)))
        try:
            with open(os.path.join(folder, entry), encoding="utf-8") as file:
                doc = yaml.safe_load(file)
        except yaml.YAMLError as err:
            found.append(f"{entry}: does not parse: {err}")
            continue
        found += [f"{entry}: {problem}" for problem in shape(doc, crates)]
    expected = list(range(1, len(numbers) + 1))
    if sorted(numbers) != expected:
        missing = sorted(set(expected) - set(numbers))
        extra = sorted(set(numbers) - set(expected))
        found.append(f"prdoc numbers do not run from 1 without a gap: missing {missing}, beyond {extra}")
    return found


def shape(doc, crates):
    """What is wrong with one parsed prdoc."""
    if not isinstance(doc, dict):
        return ["is not a mapping"]
    wrong = []
    if not isinstance(doc.get("title"), str) or not doc["title"].strip():
        wrong.append("no title")
    entries = doc.get("doc")
    if not isinstance(entries, list) or not entries:
        wrong.append("no doc entries")
    else:
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("audience") not in AUDIENCES:
                wrong.append(f"doc entry without a known audience: {entry!r:.80}")
            elif not isinstance(entry.get("description"), str) or not entry["description"].strip():
                wrong.append(f"doc entry for {entry['audience']} without a description")
    named = doc.get("crates")
    if not isinstance(named, list) or not named:
        wrong.append("no crates")
    else:
        for crate in named:
            if not isinstance(crate, dict):
                wrong.append(f"crate entry is not a mapping: {crate!r:.80}")
                continue
            if crate.get("name") not in crates:
                wrong.append(f"crate {crate.get('name')!r} is not a crate of this repository")
            if crate.get("bump") not in BUMPS:
                wrong.append(f"crate {crate.get('name')!r}: bump {crate.get('bump')!r} is not one of {sorted(BUMPS)}")
    return wrong


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    found = problems(root)
    for problem in found:
        print(problem)
    count = len([e for e in os.listdir(os.path.join(root, "prdoc")) if e.endswith(".prdoc")])
    print(f"prdoc: {count} files, {len(found)} problems")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
