#!/bin/sh
# Draws docs/flamegraph-demo.png, the README's flame graph of the demo
# server: where its goroutines allocate (uprobe on runtime.mallocgc, keyed
# by user stack) while it serves 400 requests to itself, written by
# `usdtkit trace -o FILE.html` and shot by headless chromium. Run as root
# from the repository's root; GO, BIN and OUT may name the go command,
# usdtkit's output file and the picture.
set -eu

GO=${GO:-go}
BIN=${BIN:-bin/usdtkit}
OUT=${OUT:-docs/flamegraph-demo.png}
SERVER=$(dirname "$BIN")/go-server
CGO_ENABLED=0 "$GO" build -trimpath -o "$BIN" ./cmd/usdtkit
CGO_ENABLED=0 "$GO" build -trimpath -o "$SERVER" ./examples/go-server

dir=$(mktemp -d)
"$SERVER" -addr 127.0.0.1:0 -requests 400 -interval 5ms -wait-trace >"$dir/ready" &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
i=0
while ! grep -q '^listening' "$dir/ready"; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "go-server did not start" >&2
		exit 1
	fi
	sleep 0.1
done

# The empty block enables the request probes, which start the requests.
"$BIN" trace -p "$pid" -d 4s -o "$dir/flame.html" -e '
	usdt::server:request__start, usdt::server:request__done { }
	uprobe::runtime.mallocgc { @[ustack] = count(); }' >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,600 \
	--screenshot="$OUT" "file://$dir/flame.html#q=main%5C." 2>/dev/null
echo "wrote $OUT"
