#!/bin/sh
# The demo of `make demo` (as root): build usdtkit and this server, start the
# server with some requests to itself, trace its probes for a few seconds,
# then stop it. Needs only go and a shell; run from the repository's root.
# GO and BIN may name the go command and usdtkit's output file.
set -eu

if [ "$(id -u)" -ne 0 ]; then
	echo "usdtkit: tracing needs root: run make demo as root (sudo make demo)" >&2
	exit 1
fi

GO=${GO:-go}
BIN=${BIN:-bin/usdtkit}
SERVER=$(dirname "$BIN")/go-server
# sudo resets PATH (secure_path), which often leaves out Go's own directory.
if ! command -v "$GO" >/dev/null 2>&1; then
	if [ -x /usr/local/go/bin/go ]; then
		GO=/usr/local/go/bin/go
	else
		echo "usdtkit: go is not in root's PATH: run sudo env PATH=\"\$PATH\" make demo" >&2
		exit 1
	fi
fi

# The first build compiles cilium/ebpf and the standard library and may
# take a minute or more: say what is going on before each long step.
echo "building usdtkit ($BIN)... (the first build may take a minute)"
CGO_ENABLED=0 "$GO" build -trimpath -ldflags="-s -w" -o "$BIN" ./cmd/usdtkit
echo "building examples/go-server ($SERVER)..."
CGO_ENABLED=0 "$GO" build -trimpath -o "$SERVER" ./examples/go-server
echo "starting server..."

ready=$(mktemp)
# 12 requests 200 ms apart, sent once the tracer has enabled the probes.
"$SERVER" -addr 127.0.0.1:0 -requests 12 -interval 200ms -wait-trace >"$ready" &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$ready"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait (up to 10 s) for the server's ready line: its probes are loaded then.
i=0
while ! grep -q '^listening' "$ready"; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "usdtkit: the go-server example did not start" >&2
		exit 1
	fi
	sleep 0.1
done
echo "go-server: $(cat "$ready")"
file=$(awk '{print $NF}' "$ready")

echo "tracing for 3s..."
echo "+ $BIN trace -p $pid 'usdt::server:*' -d 3s -F ... -F ..."
"$BIN" trace -p "$pid" 'usdt::server:*' -d 3s \
	-F 'server:request__start="start #%d %s", arg1, str(arg0)' \
	-F 'server:request__done="done  #%d %s -> %d in %d ns", arg1, str(arg0), arg2, arg3'

kill -TERM "$pid"
wait "$pid"
if [ -e "$file" ]; then
	echo "usdtkit: go-server left its probes' file $file" >&2
	exit 1
fi
echo "go-server: stopped, $file removed"
