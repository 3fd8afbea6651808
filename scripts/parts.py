#!/usr/bin/env python3
"""Whether the store's `Inner` is one value a part, each keeping its state to its own folder.

Reads `store.rs` of the crate given (default: the store crate) for `struct Inner`, and:
- each field's type, with only `Arc<...>` taken off, must name a struct defined in the crate
  (no lock, flag or counter sits in `Inner` itself: `Mutex<Writes>` fails), or one of
  `READ_ONLY` (public configuration, never changed while the store is open);
- every struct and enum reachable from those types (through any type its fields name:
  wrappers, generics, tuples, arrays, maps) is checked against the part that defines it: the
  top-level module (`write`, `read`, `index`, `open`, `subscription`) or root file
  (`metrics`) it lives in. A struct field (named or tuple) must not be visible outside that
  part: a private field is visible in its file's module, `pub(super)` in the parent module,
  `pub(in path)` in `path`, `pub(self)` in its own module; `pub` and `pub(crate)` are the
  whole crate. An enum's variant data is as visible as the enum, so the enum itself must not
  be visible outside its part. A type defined in `lib.rs` fails: every part sees it.
- a name defined more than once in the crate is followed to its definition in the same file,
  else in the same part, else to every definition of it;
- the schema's values (`VALUES`: plain data handed between parts by value) are not followed.

`--types` also lists every type reached from each field.

Comments and strings are left out (the reader of `imports.py`). Prints a line a part and
exits 1 on anything visible outside its part.

    python3 scripts/parts.py [substrate/client/statement-store] [--types]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imports import IDENT, code_only, module_files  # noqa: E402

# Plain data the store's user hands in, read by every part and never changed while open.
READ_ONLY = {"Config"}

# The schema's values (`index/schema.rs`): plain data the parts hand each other by value (the
# counters a write starts from, a statement's record), decoded from and encoded to disk. Their
# fields are public by design; what holds them (the writer lock around the counters, the
# matcher's queue of records) is what a part keeps to itself, and that is checked.
VALUES = {"Counters", "Tallies", "Record", "Usage", "ChannelEntry", "PostingKey", "StoredBody"}


def block_end(code, open_at, opening, closing):
    """Index of the bracket closing the one at `open_at`."""
    depth = 0
    for i in range(open_at, len(code)):
        depth += {opening: 1, closing: -1}.get(code[i], 0)
        if depth == 0:
            return i
    return len(code)


def split_fields(body):
    """`body` split at its top-level commas (`->` is not a bracket)."""
    body = re.sub(r"#\[[^\]]*\]", "", body).replace("->", "  ")
    parts, level, start = [], 0, 0
    for j, c in enumerate(body + ","):
        if c in "<([{":
            level += 1
        elif c in ">)]}":
            level -= 1
        elif c == "," and level == 0:
            if body[start:j].strip():
                parts.append(body[start:j].strip())
            start = j + 1
    return parts


VISIBILITY = r"(pub(?:\s*\([^)]*\))?)?"


def definitions(files):
    """{name: [(kind, module, visibility, fields)]} for every struct and enum in the crate.
    A struct's fields are (visibility or "", name, type); an enum's (enum visibility, variant,
    the variant's data)."""
    found = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as handle:
            code = code_only(handle.read())
        for match in re.finditer(
            rf"{VISIBILITY}\s*\b(struct|enum)\s+({IDENT})\s*(<[^{{;(]*>)?\s*([{{(;])", code
        ):
            visibility = re.sub(r"\s", "", match.group(1) or "")
            kind, name, opening = match.group(2), match.group(3), match.group(5)
            fields = []
            if opening == "{":
                body = code[match.end() : block_end(code, match.end() - 1, "{", "}")]
                for field in split_fields(body):
                    if kind == "enum":
                        fields.append((visibility, field.split("(")[0].split("{")[0].strip(), field))
                        continue
                    got = re.match(rf"{VISIBILITY}\s*({IDENT})\s*:\s*(.+)$", field, re.S)
                    if got:
                        fields.append((re.sub(r"\s", "", got.group(1) or ""), got.group(2), got.group(3)))
            elif opening == "(":
                body = code[match.end() : block_end(code, match.end() - 1, "(", ")")]
                for index, field in enumerate(split_fields(body)):
                    got = re.match(rf"{VISIBILITY}\s*(.+)$", field, re.S)
                    fields.append((re.sub(r"\s", "", got.group(1) or ""), str(index), got.group(2)))
            found.setdefault(name, []).append((kind, module, visibility, fields))
    return found


def inner_type(ty):
    """The struct an `Inner` field names, with only `Arc<...>` taken off; None otherwise."""
    ty = re.sub(r"\s", "", ty)
    while (got := re.match(r"(?:std::sync::)?Arc<(.+)>$", ty)):
        ty = got.group(1)
    got = re.match(rf"(?:{IDENT}::)*({IDENT})$", ty)
    return got.group(1) if got else None


def seen_from(visibility, module):
    """The module a field of that visibility, declared in `module`, is visible in."""
    if visibility == "":
        return module
    if visibility == "pub(super)":
        return module[:-1]
    if visibility == "pub(self)":
        return module
    got = re.match(r"pub\(in(?:crate::)?(.*)\)$", visibility.replace("incrate::", "in"))
    if got:
        return tuple(p for p in got.group(1).split("::") if p and p != "crate")
    return ()  # pub, pub(crate): the whole crate


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    crate = args[0] if args else "substrate/client/statement-store"
    files = module_files(os.path.join(crate, "src"))
    defined = definitions(files)
    inner = [d for d in defined.get("Inner", []) if d[0] == "struct"]
    if len(inner) != 1:
        sys.exit(f"{crate}: expected one struct Inner, found {len(inner)}")
    bad = []
    print(f"{crate}: Inner has {len(inner[0][3])} fields")
    for _, name, ty in inner[0][3]:
        type_name = inner_type(ty)
        if type_name in READ_ONLY:
            print(f"  {name}: {type_name} (read-only configuration)")
            continue
        if type_name not in defined:
            bad.append(f"Inner.{name}: `{' '.join(ty.split())}` is not a part's type defined in the crate")
            continue
        # Every crate type reachable from this one, each checked against its own part.
        todo, done, counted, parts = [(type_name, None)], set(), 0, set()
        while todo:
            current, seen_in = todo.pop()
            candidates = defined[current]
            for near in (lambda d: d[1] == seen_in, lambda d: seen_in and d[1][:1] == seen_in[:1]):
                if any(near(d) for d in candidates):
                    candidates = [d for d in candidates if near(d)]
                    break
            for kind, module, visibility, fields in candidates:
                if (current, module) in done:
                    continue
                done.add((current, module))
                part = module[:1]
                parts.add("::".join(part) or "lib")
                if not part:
                    bad.append(f"Inner.{name}: {current} is defined in lib.rs, which every part sees")
                    continue
                checks = [(visibility, "(the enum)")] if kind == "enum" else [(v, f) for v, f, _ in fields]
                for field_visibility, field in checks:
                    counted += 1
                    scope = seen_from(field_visibility, module)
                    if len(scope) < len(part) or scope[: len(part)] != part:
                        where = "::".join(scope) or "the whole crate"
                        bad.append(
                            f"Inner.{name} ({type_name}): {kind} {current}, {field} is "
                            f"`{field_visibility or 'private'}`, seen from {where}, outside part "
                            f"{'::'.join(part)}"
                        )
                for _, _, field_ty in fields:
                    todo += [
                        (t, module)
                        for t in re.findall(IDENT, field_ty)
                        if t in defined and t != "Inner" and t not in VALUES
                    ]
        print(
            f"  {name}: {type_name}, {counted} fields in {len(done)} types "
            f"(parts: {', '.join(sorted(parts))})"
        )
        if "--types" in sys.argv:
            for reached, module in sorted(done, key=lambda d: d[1]):
                print(f"    {'::'.join(module)}::{reached}")
    for line in bad:
        print(f"  OUTSIDE ITS PART: {line}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
