#!/usr/bin/env python3
"""Print ours / baseline ratios from a criterion run's estimates.

Usage: python3 benches/scripts/criterion_ratios.py [criterion dir]
The directory defaults to $CARGO_TARGET_DIR/criterion (or target/criterion). Benchmark ids
are `<group>/<store>/<n>` or `<group>/<case>/<store>/<n>`; each ours/baseline pair becomes
one row with both medians and the ratio.
"""
import json
import os
import sys
from pathlib import Path


def median_ns(bench_dir):
    estimates = bench_dir / "new" / "estimates.json"
    if not estimates.is_file():
        return None
    return json.loads(estimates.read_text())["median"]["point_estimate"]


def fmt(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def main():
    default = Path(os.environ.get("CARGO_TARGET_DIR", "target")) / "criterion"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    if not root.is_dir():
        sys.exit(f"no criterion results under {root}: run `cargo bench -p statement-store-benches` first")
    rows = []
    for estimates in sorted(root.glob("**/new/estimates.json")):
        bench = estimates.parent.parent
        parts = bench.relative_to(root).parts
        # Criterion turns "hit/ours" into the directory "hit_ours".
        if not any(p == "ours" or p.endswith("_ours") for p in parts):
            continue
        twin = Path(*[p[: -len("ours")] + "baseline" if p == "ours" or p.endswith("_ours") else p for p in parts])
        ours, base = median_ns(bench), median_ns(root / twin)
        if ours is None or base is None:
            continue
        label = "/".join(p.removesuffix("_ours") for p in parts if p != "ours")
        rows.append((label, ours, base))
    print("| benchmark | ours | baseline | ours / baseline |")
    print("|---|---|---|---|")
    for label, ours, base in rows:
        print(f"| {label} | {fmt(ours)} | {fmt(base)} | {ours / base:.2f}x |")


if __name__ == "__main__":
    main()
