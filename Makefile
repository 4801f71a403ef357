# usdtkit — build, test, fuzz and benchmark.
GO      ?= go
BIN     ?= bin/usdtkit
PKGS    ?= ./...
FUZZTIME ?= 10s

.PHONY: all build test test-race bench fuzz lint demo clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(BIN) ./cmd/usdtkit

# Every test, the fuzz seed corpora included. BPF/root tests skip when not
# root unless USDTKIT_REQUIRE_BPF=1, which makes such a skip a failure.
test: lint
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -race -short $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /bench$$)
	$(GO) test -run '^$$' -bench . -benchtime 20x ./bench

# Every fuzz target of every package, each for FUZZTIME.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for name in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$name"; \
			$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# The main job on this machine: list the probes of the system's Python,
# then (as root) trace a Python program from its first instruction. CPython
# 3.11 fires function__entry only while its line probe is enabled too.
PYTHON ?= /usr/bin/python3.11
demo: build
	./$(BIN) list -v $(PYTHON)
	@if [ "$$(id -u)" -ne 0 ]; then echo "usdtkit: tracing needs root: run sudo make demo"; exit 1; fi
	./$(BIN) trace -c '$(PYTHON) examples/python/fib.py' usdt::python:function__entry usdt::python:line \
		-F 'python:function__entry="-> %s (%s:%d)", str(arg1), str(arg0), arg2' \
		-F 'python:line="   line %d", arg2'

clean:
	rm -rf bin
