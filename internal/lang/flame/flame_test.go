package flame_test

import (
	"testing"

	"github.com/usdtkit/usdtkit/internal/lang/flame"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

// TestMain fails the package when the tests leak file descriptors.
func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

const (
	libc  = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	app   = "/usr/local/bin/server"
	goApp = "/usr/local/bin/gosrv"
	jit   = "/tmp/perf-4242.map"
)

// fr builds a native frame of app.
func fr(sym string) flame.Frame {
	return flame.Frame{Symbol: sym, Object: app, Addr: 0x401000, Offset: 0x1000}
}

// demo is a known set of stacks, leaf first: 100 samples in all.
func demo() []flame.Sample {
	mainFrames := []flame.Frame{fr("main"), {Symbol: "__libc_start_call_main", Object: libc, Addr: 0x7f0000029d90, Offset: 0x29d90}}
	chain := func(count uint64, leafFirst ...flame.Frame) flame.Sample {
		return flame.Sample{Frames: append(leafFirst, mainFrames...), Count: count, Root: "server"}
	}
	return []flame.Sample{
		chain(40, flame.Frame{Symbol: "malloc", Object: libc, Addr: 0x7f00000a0120, Offset: 0xa0120}, fr("leaf"), fr("level3"), fr("level2"), fr("level1")),
		chain(20, fr("leaf"), fr("level3"), fr("level2"), fr("level1")),
		chain(10, flame.Frame{Symbol: "std::vector<int, std::allocator<int> >::push_back(int const&)", Object: app, Addr: 0x402000, Offset: 0x2000}, fr("level2"), fr("level1")),
		chain(8, flame.Frame{Object: libc, Addr: 0x7f0000012345, Offset: 0x12345}, fr("level1")),
		chain(7, flame.Frame{Symbol: "LHello;::run", Object: jit, Addr: 0x7f1000000040}, fr("level1")),
		{Root: "gosrv", Count: 15, Frames: []flame.Frame{
			{Symbol: "main.add", File: "/src/gosrv/main.go", Line: 12, Inlined: true, Object: goApp, Addr: 0x4a1234, Offset: 0xa1234},
			{Symbol: "main.work", File: "/src/gosrv/main.go", Line: 20, Object: goApp, Addr: 0x4a1234, Offset: 0xa1234},
			{Symbol: "main.main", File: "/src/gosrv/main.go", Line: 30, Object: goApp, Addr: 0x4a2000, Offset: 0xa2000},
			{Symbol: "runtime.main", File: "/usr/lib/go/src/runtime/proc.go", Line: 283, Object: goApp, Addr: 0x43b000, Offset: 0x3b000},
		}},
	}
}

// screenshotDemo is a small server's stacks, for the screenshot in docs.
func screenshotDemo() []flame.Sample {
	lib := func(sym string) flame.Frame { return flame.Frame{Symbol: sym, Object: libc} }
	base := []flame.Frame{fr("worker_loop"), lib("start_thread"), lib("clone3")}
	s := func(n uint64, leafFirst ...flame.Frame) flame.Sample {
		return flame.Sample{Frames: append(leafFirst, base...), Count: n, Root: "server"}
	}
	cpp := func(sym string) flame.Frame { return flame.Frame{Symbol: sym, Object: app} }
	return []flame.Sample{
		s(120, lib("_int_malloc"), lib("malloc"), cpp("operator new(unsigned long)"), cpp("http::Request::parse(std::string_view)"), cpp("http::Server::handle(http::Conn&)")),
		s(60, lib("__memmove_avx_unaligned_erms"), cpp("http::Request::parse(std::string_view)"), cpp("http::Server::handle(http::Conn&)")),
		s(90, lib("_int_free"), lib("free"), cpp("http::Response::~Response()"), cpp("http::Server::handle(http::Conn&)")),
		s(150, cpp("json::Writer::escape(std::string const&)"), cpp("json::Writer::value(json::Value const&)"), cpp("http::Response::write_json(json::Value const&)"), cpp("http::Server::handle(http::Conn&)")),
		s(70, lib("_int_malloc"), lib("malloc"), cpp("json::Writer::value(json::Value const&)"), cpp("http::Response::write_json(json::Value const&)"), cpp("http::Server::handle(http::Conn&)")),
		s(80, lib("__libc_send"), fr("conn_write"), cpp("http::Server::handle(http::Conn&)")),
		s(40, flame.Frame{Object: libc, Offset: 0x11f3a0}, lib("epoll_wait"), fr("event_loop")),
		s(35, flame.Frame{Symbol: "Interpreter", Object: jit}, flame.Frame{Symbol: "LRules;::match", Object: jit}, cpp("plugin::Java::call(char const*)"), cpp("http::Server::handle(http::Conn&)")),
		{Root: "metrics", Count: 55, Frames: []flame.Frame{
			{Symbol: "strconv.appendQuotedWith", File: "/usr/lib/go/src/strconv/quote.go", Line: 30, Inlined: true, Object: goApp},
			{Symbol: "encoding/json.appendString", File: "/usr/lib/go/src/encoding/json/encode.go", Line: 990, Object: goApp},
			{Symbol: "main.(*exporter).flush", File: "/src/metrics/main.go", Line: 88, Object: goApp},
			{Symbol: "main.main", File: "/src/metrics/main.go", Line: 20, Object: goApp},
			{Symbol: "runtime.main", File: "/usr/lib/go/src/runtime/proc.go", Line: 283, Object: goApp},
		}},
		{Root: "metrics", Count: 30, Frames: []flame.Frame{
			{Symbol: "runtime.mallocgc", File: "/usr/lib/go/src/runtime/malloc.go", Line: 1000, Object: goApp},
			{Symbol: "main.(*exporter).flush", File: "/src/metrics/main.go", Line: 90, Object: goApp},
			{Symbol: "main.main", File: "/src/metrics/main.go", Line: 20, Object: goApp},
			{Symbol: "runtime.main", File: "/usr/lib/go/src/runtime/proc.go", Line: 283, Object: goApp},
		}},
	}
}

func TestFrameKind(t *testing.T) {
	tests := []struct {
		name  string
		frame flame.Frame
		want  string
	}{
		{"c", flame.Frame{Symbol: "malloc", Object: libc}, flame.KindNative},
		{"c++", flame.Frame{Symbol: "std::vector<int>::push_back(int const&)", Object: app}, flame.KindCPP},
		{"go file", flame.Frame{Symbol: "main.work", File: "/src/main.go", Object: goApp}, flame.KindGo},
		{"go runtime", flame.Frame{Symbol: "runtime.mallocgc", Object: goApp}, flame.KindGo},
		{"perf map", flame.Frame{Symbol: "LFoo;::bar", Object: jit}, flame.KindJIT},
		{"anonymous", flame.Frame{Symbol: "Interpreter"}, flame.KindJIT},
		{"no symbol", flame.Frame{Object: libc, Offset: 0x10}, flame.KindUnknown},
		{"override", flame.Frame{Symbol: "x", Object: libc, Kind: "python"}, "python"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := flame.FrameKind(tt.frame); have != tt.want {
				t.Errorf("have %q, want %q", have, tt.want)
			}
		})
	}
}
