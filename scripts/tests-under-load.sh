#!/usr/bin/env bash
# The workspace's tests, several runs at the same time beside CPU hogs: a bound in a test is
# a hang detector, so every test must pass on a machine this busy.
#
#   scripts/tests-under-load.sh [RUNS] [HOGS]     (default: 2 runs, one hog per core)
#
# Builds the tests once (`cargo test --workspace --no-run`), then starts HOGS busy loops
# (`yes > /dev/null`) and RUNS copies of every test binary's run at once, each binary in its
# package's directory as cargo runs it. Prints each run's failures and exits 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-2}"
hogs="${2:-$(nproc)}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/statement-store/target}"
out="$(mktemp -d)"

echo "== building the tests"
cargo test --workspace --locked --no-run --message-format=json 2>/dev/null \
	| python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(os.path.dirname(m["manifest_path"]) + "\t" + m["executable"])
' | sort -u > "$out/binaries"
echo "$(wc -l < "$out/binaries") test binaries"

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq "$hogs"); do
	yes > /dev/null &
	pids+=($!)
done
echo "== $runs runs at once beside $hogs CPU hogs (load: $(cut -d' ' -f1 /proc/loadavg))"

run() {
	local n="$1" failed=0
	while IFS=$'\t' read -r dir binary; do
		if ! (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$binary") > "$out/run$n-$(basename "$binary").log" 2>&1; then
			echo "run $n: $(basename "$binary") failed (log: $out/run$n-$(basename "$binary").log)"
			grep -E "^test .* FAILED|panicked at|^---- " "$out/run$n-$(basename "$binary").log" | head -20
			failed=1
		fi
	done < "$out/binaries"
	return "$failed"
}
started=$(date +%s)
runners=()
for n in $(seq "$runs"); do
	run "$n" &
	runners+=($!)
done
status=0
for pid in "${runners[@]}"; do
	wait "$pid" || status=1
done
passed=$(cat "$out"/run*.log | grep -cE "^test .* ok$" || true)
failed=$(cat "$out"/run*.log | grep -cE "^test .* FAILED$" || true)
echo "== $runs runs in $(( $(date +%s) - started )) s: $passed tests passed, $failed failed (logs: $out)"
exit "$status"
