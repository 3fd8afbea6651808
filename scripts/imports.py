#!/usr/bin/env python3
"""Which files of a crate depend on which: every path in every line (use trees and inline
paths; comments and doc links excluded) that names a module of the crate (`crate::`, `super::`,
`self::`, or a child module's name outside the crate root, whose child paths are its facade),
resolved to the file that defines the module it names. A path inside an inline module (a
file's `mod tests { use super::*; }`) is read from that module, so its `super` is the file.

Prints, for each crate directory given (default: the store crate):
- files, and imports between distinct files;
- imports that point up (to a file whose module is an ancestor of the importer's);
- circles: groups of files that reach each other, each with one path round it;
- files over 600 lines.

Exits 1 if it finds a circle and `--no-circles` was given, so CI can hold the line once it is
reached.

    python3 scripts/imports.py substrate/client/statement-store [--no-circles] [--up]

`--up` lists each import that points up.
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_files(src, skip=()):
    """{module path tuple: file} for every .rs file under src (but the `skip` folders)."""
    files = {}
    for root, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[:-3].split(os.sep)
            if rel[-1] in ("lib", "main", "mod"):
                rel = rel[:-1]
            files[tuple(rel)] = path
    return files


def expand_tree(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (`self` items name the prefix)."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix = tree[:i].rstrip(":").strip()
                inner = tree[i + 1 : tree.rindex("}")]
                parts, level, start = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                out = []
                for part in parts:
                    part = part.strip()
                    if not part:
                        continue
                    for sub in expand_tree(part):
                        if sub == "self":
                            out.append(prefix)
                        else:
                            out.append(f"{prefix}::{sub}" if prefix else sub)
                return out
            depth += 1
    return [tree.split(" as ")[0].strip()]


def code_only(text):
    """`text` without comments, and with the contents of string and char literals blanked (so
    neither their paths nor their braces count); every other character keeps its place."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, nxt = text[i], text[i + 1 : i + 2]
        if c == "/" and nxt == "/":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "/" and nxt == "*":
            depth, i = 1, i + 2
            while i < n and depth:
                depth += {"/*": 1, "*/": -1}.get(text[i : i + 2], 0)
                i += 2 if text[i : i + 2] in ("/*", "*/") else 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and not re.match(r"\w", text[i - 1 : i] or " "):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
            i = end
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and (nxt == "\\" or text[i + 2 : i + 3] == "'"):
            end = text.find("'", i + 3)
            out.append("' '")
            i = n if end < 0 else end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def inline_modules(code):
    """[(start, end, name)] of every inline `mod name { ... }` in `code`."""
    spans = []
    for match in re.finditer(rf"\bmod\s+({IDENT})\s*\{{", code):
        depth, end = 0, len(code)
        for i in range(match.end() - 1, len(code)):
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        spans.append((match.start(), end, match.group(1)))
    return spans


def paths_in(text):
    """Every path in the file's code: use trees and inline paths (`a::b`, not `x.a::b`), each
    with the inline modules it is written in (`super` in a file's `mod tests` is the file)."""
    code = code_only(text)
    spans = inline_modules(code)
    inside = lambda at: tuple(name for start, end, name in spans if start <= at < end)
    found = []
    for match in re.finditer(r"\buse\s+([^;]+);", code):
        found.extend((path, inside(match.start())) for path in expand_tree(match.group(1)))
    code_without_uses = re.sub(r"\buse\s+[^;]+;", lambda m: " " * len(m.group(0)), code)
    for match in re.finditer(rf"(?<![:\w.])({IDENT}(?:::{IDENT})+)", code_without_uses):
        found.append((match.group(1), inside(match.start())))
    return found


def resolve(path, module, files):
    """The module file a path names: the longest prefix that is a module of the crate."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] not in ("super", "self"):
        # A path from this module: to a child module, else to another crate (not followed).
        # The crate root's are its facade (`pub use` of what its parts define), not edges.
        base, rest = tuple(module), parts
        if not base or base + (rest[0],) not in files:
            return None
    else:
        base = list(module)
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
        base = tuple(base)
    best = base if base in files else None
    for i in range(1, len(rest) + 1):
        candidate = base + tuple(rest[:i])
        if candidate in files:
            best = candidate
    return best


def circles(graph):
    """Strongly connected groups of more than one file (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def cycle_in(group, graph):
    """One path round a group, for the report."""
    members = set(group)
    start = group[0]
    path, seen = [start], {start}
    while True:
        nxt = next((w for w in sorted(graph[path[-1]]) if w in members and (w == start or w not in seen)), None)
        if nxt is None or nxt == start:
            return path + [start]
        path.append(nxt)
        seen.add(nxt)


def report(crate):
    """Each crate target under `crate`: the library (`src/`), and each binary in `src/bin/`,
    which is a crate of its own."""
    src = os.path.join(crate, "src")
    bins = os.path.join(src, "bin")
    targets = [(crate, module_files(src, skip=(bins,)))]
    if os.path.isdir(bins):
        for entry in sorted(os.listdir(bins)):
            path = os.path.join(bins, entry)
            if os.path.isdir(path):
                targets.append((path, module_files(path)))
            elif entry.endswith(".rs"):
                targets.append((path, {(): path}))
    groups = []
    for label, files in targets:
        if files:
            groups += report_target(label, files)
    return groups


def report_target(crate, files):
    graph = {module: set() for module in files}
    imports = up = 0
    for module, path in sorted(files.items()):
        text = open(path, encoding="utf-8").read()
        targets = set()
        for found, inline in paths_in(text):
            target = resolve(found, module + inline, files)
            if target is not None and target != module:
                targets.add(target)
        for target in targets:
            imports += 1
            graph[module].add(target)
            if module[: len(target)] == target:
                up += 1
                if "--up" in sys.argv:
                    print(f"  up: {'::'.join(module) or 'lib'} -> {'::'.join(target) or 'lib'}")
    name = lambda m: "::".join(m) or "lib"
    groups = circles(graph)
    long = sorted(
        (sum(1 for _ in open(p, encoding="utf-8")), p) for p in files.values()
    )
    long = [(n, p) for n, p in long if n > 600]
    print(f"{crate}: {len(files)} files, {imports} imports between files, {up} pointing up, {len(groups)} circles")
    for group in groups:
        members = ", ".join(name(m) for m in group)
        path = " -> ".join(name(m) for m in cycle_in(group, graph))
        print(f"  circle of {len(group)} ({members}): {path}")
    for n, p in long:
        print(f"  {p}: {n} lines")
    return groups


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    strict = "--no-circles" in sys.argv
    crates = args or ["substrate/client/statement-store"]
    found = False
    for crate in crates:
        found |= bool(report(crate))
    if strict and found:
        sys.exit(1)


if __name__ == "__main__":
    main()
