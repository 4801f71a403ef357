# usdtkit — build, test, fuzz and benchmark.
GO      ?= go
BIN     ?= bin/usdtkit
# usdtkit agent runs usdtkit-agent from beside usdtkit.
AGENT_BIN ?= $(dir $(BIN))usdtkit-agent
PKGS    ?= ./...
FUZZTIME ?= 10s
# Go's fuzzer minimizes every new interesting input, by default for up to
# a minute each: on targets whose inputs are whole ELF files that left
# them minimizing for most of FUZZTIME (FuzzSymbols ran 25 inputs in 40 s;
# with 1 s, 100 000). A failing input is still written, less minimized.
FUZZMINTIME ?= 1s

.PHONY: all build test test-race bench fuzz lint demo clean libstapsdt install-libstapsdt docs

# install-libstapsdt puts the library in $(DESTDIR)$(LIBDIR), its header in
# $(DESTDIR)$(INCLUDEDIR).
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(BIN) ./cmd/usdtkit
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o $(AGENT_BIN) ./cmd/usdtkit-agent

# Every test, the fuzz seed corpora included. BPF/root tests skip when not
# root unless USDTKIT_REQUIRE_BPF=1, which makes such a skip a failure.
test: lint libstapsdt
	$(GO) test -count=1 -timeout 25m $(PKGS)
	$(GO) test -count=1 -timeout 25m -race -short $(PKGS)

# docs/cli from the commands' own help (a test fails when it is stale).
docs:
	$(GO) test -count=1 -run '^TestCLIDocs$$' ./cmd/usdtkit ./cmd/usdtkit-agent -args -update-docs

bench:
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./... | grep -v /bench$$)
	$(GO) test -run '^$$' -bench . -benchtime 20x ./bench

# Every fuzz target of every package, each for FUZZTIME. Go's fuzzer
# sometimes ends a time-bounded run with its own "context deadline exceeded"
# on a loaded machine, without a failing input; such a run (and only such a
# run: no new file in testdata/fuzz) is tried again, twice at most (a CI run
# saw it on two targets of 46).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for name in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$name"; \
			for try in 1 2 3; do \
				if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) $$pkg > .fuzz.log 2>&1; then \
					tail -n 3 .fuzz.log; break; \
				fi; \
				cat .fuzz.log; \
				if [ $$try != 3 ] && grep -q 'context deadline exceeded' .fuzz.log && \
					[ -z "$$(git status --porcelain -- "$$dir/testdata/fuzz")" ]; then \
					echo "fuzz $$name: the fuzzer's own deadline, no failing input: once more"; continue; \
				fi; \
				rm -f .fuzz.log; exit 1; \
			done; \
		done; \
	done; rm -f .fuzz.log

# The libstapsdt-compatible C library (cmd/libstapsdt): bin/libstapsdt.so.0,
# the bin/libstapsdt.so link and bin/libstapsdt.h. Plain C (no Go runtime
# in the programs that load it); needs a C compiler. LIBSTAPSDT_OUT and
# LIBSTAPSDT_CC choose where and with what (the tests cross-build it).
LIBSTAPSDT_OUT ?= bin
LIBSTAPSDT_CC ?= gcc
LIBSTAPSDT_SRC = $(addprefix cmd/libstapsdt/c/,stapsdt.c sdtelf.c sdtload.c)
libstapsdt:
	mkdir -p $(LIBSTAPSDT_OUT)
	$(LIBSTAPSDT_CC) -O2 -g -Wall -Wextra -Werror -fPIC -shared -pthread \
		-fstack-protector-strong -D_FORTIFY_SOURCE=2 -Icmd/libstapsdt \
		-Wl,-soname,libstapsdt.so.0 -Wl,--version-script,cmd/libstapsdt/libstapsdt.map \
		-Wl,-z,noexecstack -Wl,-z,relro -Wl,-z,now \
		-o $(LIBSTAPSDT_OUT)/libstapsdt.so.0 $(LIBSTAPSDT_SRC)
	ln -sf libstapsdt.so.0 $(LIBSTAPSDT_OUT)/libstapsdt.so
	cp cmd/libstapsdt/libstapsdt.h $(LIBSTAPSDT_OUT)/libstapsdt.h

install-libstapsdt: libstapsdt
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)
	install -m 0755 bin/libstapsdt.so.0 $(DESTDIR)$(LIBDIR)/libstapsdt.so.0
	ln -sf libstapsdt.so.0 $(DESTDIR)$(LIBDIR)/libstapsdt.so
	install -m 0644 bin/libstapsdt.h $(DESTDIR)$(INCLUDEDIR)/libstapsdt.h

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
