#!/usr/bin/env python3
"""Each architecture and repository check fails on a planted fault and passes on the tree as
it is: `imports.py` (circles between files), `parts.py` (the store's parts keep their state),
`ran_all.py` (every privileged test ran) and `prdoc.py` (well-formed prdocs).

    python3 -m unittest discover -s scripts -p 'test_*.py'
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STORE = os.path.join(ROOT, "substrate", "client", "statement-store")
sys.path.insert(0, HERE)

import invariants  # noqa: E402
import prdoc  # noqa: E402
import ran_all  # noqa: E402


def run(script, *args, cwd=ROOT):
    """Run `script` with `args`: (exit code, output)."""
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout + done.stderr


def crate(files):
    """A crate in a fresh directory with `files` ({path under src: text}); its path."""
    root = tempfile.mkdtemp(prefix="check-crate-")
    for path, text in files.items():
        full = os.path.join(root, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as file:
            file.write(textwrap.dedent(text))
    return root


class Imports(unittest.TestCase):
    def test_a_circle_between_two_files_fails_and_its_absence_passes(self):
        circle = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "pub struct B(crate::a::A);\n",
        })
        code, out = run("imports.py", "--no-circles", circle)
        self.assertEqual(code, 1, out)
        self.assertIn("circle of 2", out)
        line = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::B;\npub struct A(B);\n",
            "b.rs": "pub struct B;\n",
        })
        code, out = run("imports.py", "--no-circles", line)
        self.assertEqual(code, 0, out)
        self.assertIn("0 circles", out)

    def test_a_path_in_a_comment_is_no_import(self):
        commented = crate({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "// see crate::b::B\npub struct A;\n",
            "b.rs": "pub struct B(crate::a::A);\n",
        })
        code, out = run("imports.py", "--no-circles", commented)
        self.assertEqual(code, 0, out)

    def test_every_library_crate_of_the_tree_has_no_circle(self):
        crates = [
            "substrate/primitives/statement-store",
            "substrate/client/statement-store",
            "substrate/client/rpc-statement",
            "substrate/client/rpc-server",
            "substrate/client/network-statement",
            "node",
            "benches",
            "test-support",
            "tools/simulate",
        ]
        code, out = run("imports.py", "--no-circles", *crates)
        self.assertEqual(code, 0, out)


class Parts(unittest.TestCase):
    def planted(self, path, old, new):
        """A copy of the store crate with `old` replaced by `new` in `path`: its check."""
        copy = tempfile.mkdtemp(prefix="parts-")
        shutil.copytree(os.path.join(STORE, "src"), os.path.join(copy, "src"))
        target = os.path.join(copy, "src", path)
        with open(target, encoding="utf-8") as file:
            text = file.read()
        self.assertIn(old, text, f"{path} no longer has {old!r}: update the planted fault")
        with open(target, "w", encoding="utf-8") as file:
            file.write(text.replace(old, new, 1))
        return run("parts.py", copy)

    def test_the_store_as_it_is_passes(self):
        code, out = run("parts.py", STORE)
        self.assertEqual(code, 0, out)

    def test_a_lock_around_a_part_in_inner_fails(self):
        code, out = self.planted("store.rs", "pub writes: Writes,", "pub writes: parking_lot::Mutex<Writes>,")
        self.assertEqual(code, 1, out)
        self.assertIn("Inner.writes", out)

    def test_a_part_field_seen_outside_its_folder_fails(self):
        code, out = self.planted(
            "write/mod.rs", "pub(crate) struct Writes {\n", "pub(crate) struct Writes {\n\tpub(crate) leaked: u64,\n"
        )
        self.assertEqual(code, 1, out)
        self.assertIn("OUTSIDE ITS PART", out)


class RanAll(unittest.TestCase):
    def tree(self, count):
        root = tempfile.mkdtemp(prefix="ran-all-")
        body = "".join(
            f'#[test]\n#[ignore = "needs root: mounts a tmpfs"]\nfn t{n}() {{}}\n' for n in range(count)
        )
        with open(os.path.join(root, "faults.rs"), "w", encoding="utf-8") as file:
            file.write("mod needs_root {\n" + body + "}\n")
        return root

    def test_every_declared_test_passed_holds(self):
        output = "test needs_root::t0 ... ok\ntest needs_root::t1 ... ok\n"
        _, holds = ran_all.verdict(output, self.tree(2))
        self.assertTrue(holds)

    def test_a_declared_test_that_did_not_run_fails(self):
        lines, holds = ran_all.verdict("test needs_root::t0 ... ok\n", self.tree(2))
        self.assertFalse(holds)
        self.assertTrue(any("did not run" in line for line in lines), lines)

    def test_a_failed_or_still_ignored_test_fails(self):
        failed = "test needs_root::t0 ... ok\ntest needs_root::t1 ... FAILED\n"
        self.assertFalse(ran_all.verdict(failed, self.tree(2))[1])
        ignored = "test needs_root::t0 ... ok\ntest needs_root::t1 ... ignored, needs root\n"
        self.assertFalse(ran_all.verdict(ignored, self.tree(2))[1])

    def test_no_declared_test_at_all_fails(self):
        self.assertFalse(ran_all.verdict("", self.tree(0))[1])

    def test_the_tree_declares_its_privileged_tests(self):
        count, _ = ran_all.declared(ROOT)
        self.assertGreaterEqual(count, 4)


class Prdoc(unittest.TestCase):
    def repo(self, prdocs):
        root = tempfile.mkdtemp(prefix="prdoc-")
        os.makedirs(os.path.join(root, "prdoc"))
        os.makedirs(os.path.join(root, "crate"))
        with open(os.path.join(root, "crate", "Cargo.toml"), "w", encoding="utf-8") as file:
            file.write('[package]\nname = "statement-store"\nversion = "0.1.0"\n')
        for name, text in prdocs.items():
            with open(os.path.join(root, "prdoc", name), "w", encoding="utf-8") as file:
                file.write(textwrap.dedent(text))
        return root

    GOOD = """\
        title: "A change"
        doc:
          - audience: Node Operator
            description: |
              What changed.
        crates:
          - name: statement-store
            bump: minor
        """

    def test_a_well_formed_prdoc_passes_and_the_tree_does(self):
        self.assertEqual(prdoc.problems(self.repo({"pr_0001.prdoc": self.GOOD})), [])
        self.assertEqual(prdoc.problems(ROOT), [])

    def test_a_bad_name_a_gap_an_unknown_crate_and_bad_yaml_each_fail(self):
        unknown = self.GOOD.replace("statement-store", "no-such-crate")
        found = prdoc.problems(self.repo({
            "pr_0001.prdoc": self.GOOD,
            "pr_0003.prdoc": unknown,
            "pr_0004_slug.prdoc": self.GOOD,
            "pr_0002.prdoc": "title: [unclosed\n",
        }))
        text = "\n".join(found)
        self.assertIn("not named pr_NNNN.prdoc", text)
        self.assertIn("'no-such-crate' is not a crate", text)
        self.assertIn("does not parse", text)
        gap = prdoc.problems(self.repo({"pr_0001.prdoc": self.GOOD, "pr_0003.prdoc": self.GOOD}))
        self.assertTrue(any("without a gap" in problem for problem in gap), gap)


class Invariants(unittest.TestCase):
    def doc(self, text):
        root = tempfile.mkdtemp(prefix="invariants-")
        os.makedirs(os.path.join(root, "tests"))
        with open(os.path.join(root, "tests", "crash.rs"), "w", encoding="utf-8") as file:
            file.write("#[test]\nfn survives() {}\nmod needs_root {\n\t#[test]\n\tfn fills() {}\n}\n")
        path = os.path.join(root, "ARCHITECTURE.md")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return invariants.missing(path, root)

    def test_named_tests_that_exist_pass_and_the_real_document_does(self):
        absent, count = self.doc("1. `tests/crash.rs::survives`\n2. `tests/crash.rs::needs_root::fills`\n")
        self.assertEqual((absent, count), ([], 2))
        absent, count = invariants.missing(os.path.join(ROOT, "ARCHITECTURE.md"), ROOT)
        self.assertEqual(absent, [])
        self.assertGreaterEqual(count, 20)

    def test_a_renamed_test_a_wrong_module_or_file_is_found(self):
        absent, _ = self.doc(
            "`tests/crash.rs::renamed` `tests/crash.rs::elsewhere::fills` `tests/gone.rs::survives`"
        )
        self.assertEqual(len(absent), 3, absent)


if __name__ == "__main__":
    unittest.main()
