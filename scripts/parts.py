#!/usr/bin/env python3
"""Whether the store's `Inner` is one value a part, each keeping its state to its own folder.

Reads `store.rs` of the crate given (default: the store crate) for `struct Inner`, and for
each field:
- its type, with `Arc<...>` taken off, must be a struct defined in the crate (no lock, flag
  or counter sits in `Inner` itself), or one of `READ_ONLY` (public configuration, never
  changed while the store is open);
- that struct's own fields must not be visible outside the part that defines it: the
  top-level module (`write`, `read`, `index`, `open`, `subscription`) or root file
  (`metrics`) it lives in. A private field is visible in its file's module, `pub(super)` in
  the parent module, `pub(in path)` in `path`; `pub` and `pub(crate)` are the whole crate.
  The rule is applied again to every struct-typed field those structs hold whose type is
  defined in the crate (so `Subscriptions`' shared state counts too).

Comments and strings are left out (the reader of `imports.py`). Prints a line a part and
exits 1 on a field that is visible outside its part.

    python3 scripts/parts.py [substrate/client/statement-store]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from imports import IDENT, code_only, module_files  # noqa: E402

# Plain data the store's user hands in, read by every part and never changed while open.
READ_ONLY = {"Config"}


def struct_bodies(files):
    """{struct name: (module path, field list)} for every braced struct in the crate; each
    field is (visibility or "", name, type)."""
    found = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as handle:
            code = code_only(handle.read())
        for match in re.finditer(rf"\bstruct\s+({IDENT})\s*(<[^{{;]*>)?\s*\{{", code):
            depth, i = 0, match.end() - 1
            for i in range(match.end() - 1, len(code)):
                depth += {"{": 1, "}": -1}.get(code[i], 0)
                if depth == 0:
                    break
            body = code[match.end() : i]
            # Attributes out; then split at top-level commas.
            body = re.sub(r"#\[[^\]]*\]", "", body)
            fields, level, start = [], 0, 0
            for j, c in enumerate(body + ","):
                if c in "<([":
                    level += 1
                elif c in ">)]":
                    level -= 1
                elif c == "," and level == 0:
                    field = body[start:j].strip()
                    start = j + 1
                    got = re.match(rf"(pub(?:\s*\([^)]*\))?)?\s*({IDENT})\s*:\s*(.+)$", field, re.S)
                    if got:
                        fields.append((re.sub(r"\s", "", got.group(1) or ""), got.group(2), got.group(3).strip()))
            found.setdefault(match.group(1), (module, fields))
    return found


def named_type(ty):
    """The struct a field's type names: `Arc<Writes>` -> Writes, `Mutex<Index>` -> Index."""
    ty = re.sub(r"\s", "", ty)
    while True:
        got = re.match(rf"(?:[A-Za-z_:]*::)?(Arc|Box|Mutex|RwLock|Option|Vec|VecDeque)<(.+)>$", ty)
        if not got:
            break
        ty = got.group(2)
    got = re.match(rf"(?:{IDENT}::)*({IDENT})$", ty)
    return got.group(1) if got else None


def seen_from(visibility, module):
    """The module a field of that visibility, declared in `module`, is visible in."""
    if visibility == "":
        return module
    if visibility == "pub(super)":
        return module[:-1]
    got = re.match(r"pub\(in(?:crate::)?(.*)\)$", visibility.replace("incrate::", "in"))
    if got:
        return tuple(p for p in got.group(1).split("::") if p and p != "crate")
    return ()  # pub, pub(crate): the whole crate


def main():
    crate = sys.argv[1] if len(sys.argv) > 1 else "substrate/client/statement-store"
    files = module_files(os.path.join(crate, "src"))
    structs = struct_bodies(files)
    if "Inner" not in structs:
        sys.exit(f"{crate}: no struct Inner")
    _, inner_fields = structs["Inner"]
    bad = []
    print(f"{crate}: Inner has {len(inner_fields)} fields")
    for _, name, ty in inner_fields:
        type_name = named_type(ty)
        if type_name in READ_ONLY:
            print(f"  {name}: {type_name} (read-only configuration)")
            continue
        if type_name not in structs:
            bad.append(f"Inner.{name}: `{ty}` is not a part's type defined in the crate")
            continue
        part = structs[type_name][0][:1]
        # Every crate struct reachable from this part's type, through its fields.
        todo, done, counted = [type_name], set(), 0
        while todo:
            current = todo.pop()
            if current in done or current not in structs:
                continue
            done.add(current)
            module, fields = structs[current]
            for visibility, field, field_ty in fields:
                counted += 1
                scope = seen_from(visibility, module)
                if scope[: len(part)] != part or len(scope) < len(part):
                    where = "::".join(scope) or "the whole crate"
                    bad.append(
                        f"Inner.{name} ({type_name}): {current}.{field} is `{visibility}`, seen from "
                        f"{where}, outside part {'::'.join(part)}"
                    )
                inner = named_type(field_ty)
                if inner and inner in structs and structs[inner][0][:1] == part:
                    todo.append(inner)
        print(f"  {name}: {type_name}, part {'::'.join(part)}, {counted} fields in {len(done)} structs")
    for line in bad:
        print(f"  FIELD OUTSIDE ITS PART: {line}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
