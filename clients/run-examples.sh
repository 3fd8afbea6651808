#!/usr/bin/env bash
# Run the client examples against a fresh `--dev` statement-node: the polkadot-js one
# (js/submit.mjs) and the substrate-interface one (python/submit.py), each over WebSocket and
# over HTTP, the spec-v2 API with @polkadot/api (js/v2.mjs), and the apps' library on
# polkadot-api (apps/follow.mjs), over WebSocket. Builds nothing; installs each example's dependencies in its own folder.
#
#   clients/run-examples.sh [path/to/statement-node]
#
# The node defaults to $CARGO_TARGET_DIR/debug/statement-node, or target/debug/statement-node.
# A language whose tools are missing (node and npm; python3) is skipped with a message.
# Exits non-zero if anything fails.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
node_bin="${1:-${CARGO_TARGET_DIR:-$root/target}/debug/statement-node}"
if [ ! -x "$node_bin" ]; then
	echo "no statement-node at $node_bin: build it (cargo build -p statement-node) or pass its path" >&2
	exit 2
fi

work="$(mktemp -d)"
node_pid=""
cleanup() {
	if [ -n "$node_pid" ]; then
		kill "$node_pid" 2>/dev/null
		wait "$node_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# Port 0: the OS picks a free port, which the node writes in its readiness file.
"$node_bin" --dev --rpc-port 0 --no-prometheus --listen-addr /ip4/127.0.0.1/tcp/0 \
	--ready-file "$work/ready.json" 2>"$work/node.log" &
node_pid=$!
port=""
for _ in $(seq 1 300); do
	if [ -f "$work/ready.json" ]; then
		port="$(sed -n 's/.*"rpc": *"[^"]*:\([0-9]*\)".*/\1/p' "$work/ready.json")"
	fi
	[ -n "$port" ] && break
	if ! kill -0 "$node_pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [ -z "$port" ]; then
	echo "the node did not start:" >&2
	cat "$work/node.log" >&2
	exit 1
fi
echo "statement-node --dev serving JSON-RPC on port $port"

# The reference the examples check their own encoding and signing against.
if ! reference="$("$node_bin" sign --topic statement-store-example --data reference --sequence 7 \
	2>/dev/null)"; then
	echo "statement-node sign failed" >&2
	exit 1
fi

failed=0
run() {
	local name="$1"
	shift
	echo "== $name"
	if "$@"; then
		echo "== $name: ok"
	else
		echo "== $name: FAILED" >&2
		failed=1
	fi
}

if command -v node >/dev/null && command -v npm >/dev/null; then
	if (cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error); then
		for url in "ws://127.0.0.1:$port" "http://127.0.0.1:$port"; do
			run "polkadot-js over $url" \
				node "$here/js/submit.mjs" "$url" "$reference"
		done
		# The spec-v2 API, with a statement of its own on a topic of its own.
		v2_topic_name="statement-store-v2-example-$$"
		if v2_statement="$("$node_bin" sign --topic "$v2_topic_name" --data v2 2>"$work/v2-sign.txt")"; then
			v2_topic="$(sed -n 's/^topic: //p' "$work/v2-sign.txt")"
			run "the spec-v2 API (statement_unstable_*) with @polkadot/api" \
				node "$here/js/v2.mjs" "ws://127.0.0.1:$port" "$v2_statement" "$v2_topic"
		else
			echo "statement-node sign failed" >&2
			failed=1
		fi
	else
		echo "npm ci failed in $here/js" >&2
		failed=1
	fi
	if (cd "$here/apps" && npm ci --no-audit --no-fund --loglevel=error); then
		run "the apps' library on polkadot-api, settling" \
			node "$here/apps/follow.mjs" "ws://127.0.0.1:$port" 3
	else
		echo "npm ci failed in $here/apps" >&2
		failed=1
	fi
else
	echo "skipping the polkadot-js and polkadot-api examples: node and npm are needed"
fi

if command -v python3 >/dev/null; then
	venv="$here/python/venv"
	if python3 -m venv "$venv" && "$venv/bin/pip" install --quiet -r "$here/python/requirements.txt"; then
		for url in "ws://127.0.0.1:$port" "http://127.0.0.1:$port"; do
			run "substrate-interface over $url" \
				"$venv/bin/python" "$here/python/submit.py" "$url" "$reference"
		done
	else
		echo "could not install $here/python/requirements.txt into $venv" >&2
		failed=1
	fi
else
	echo "skipping the substrate-interface example: python3 is needed"
fi

if [ "$failed" -ne 0 ]; then
	echo "some examples FAILED; the node's log:" >&2
	tail -n 20 "$work/node.log" >&2
fi
exit "$failed"
