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

# The main job on this machine: list the probes of the system's Python.
demo: build
	./$(BIN) list -v /usr/bin/python3.11

clean:
	rm -rf bin
