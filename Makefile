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

# The main job on a fresh machine (as root): build usdtkit and
# examples/go-server, start the server with some requests to itself, and
# trace its USDT probes for 3 seconds, printing each request's events.
demo:
	@GO='$(GO)' BIN='$(BIN)' sh examples/go-server/demo.sh

clean:
	rm -rf bin
