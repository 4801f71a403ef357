package usdtlink_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

func TestParseSection(t *testing.T) {
	for _, c := range []struct {
		sec, path, provider, name string
		ok                        bool
	}{
		{"usdt/libc.so.6:libc:setjmp", "libc.so.6", "libc", "setjmp", true},
		{"usdt.s//usr/bin/python3.11:python:function__entry", "/usr/bin/python3.11", "python", "function__entry", true},
		{"usdt//a:b/c:p:n", "/a:b/c", "p", "n", true},
		{"usdt", "", "", "", false},
		{"usdt/", "", "", "", false},
		{"usdt/x:p", "", "", "", false},
		{"usdt/:p:n", "", "", "", false},
		{"usdt/x::n", "", "", "", false},
		{"usdt/x:p:", "", "", "", false},
		{"uprobe/x:p:n", "", "", "", false},
	} {
		path, provider, name, ok := usdtlink.ParseSection(c.sec)
		if path != c.path || provider != c.provider || name != c.name || ok != c.ok {
			t.Errorf("ParseSection(%q) = %q %q %q %v", c.sec, path, provider, name, ok)
		}
	}
}

// TestAttachCollection builds an object whose BPF_USDT programs sit in
// libbpf's SEC("usdt/PATH:PROVIDER:NAME") sections and attaches them all
// with one call, with uprobe_multi and, for programs loaded without the
// uprobe_multi attach type, with the classic fallback.
func TestAttachCollection(t *testing.T) {
	testutil.RequireBPF(t)
	clang := testutil.RequireTool(t, "clang")
	exe := buildC(t, "testdata/operands.c")
	obj := filepath.Join(t.TempDir(), "auto.o")
	args := append(append([]string{}, clangFlags...), `-DTARGET="`+exe+`"`, "-c", "testdata/auto.bpf.c", "-o", obj)
	if out, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	tr := testutil.StartTracee(t, exe)
	for _, multi := range []bool{true, false} {
		spec, err := usdtlink.LoadCollectionSpec(obj)
		if err != nil {
			t.Fatal(err)
		}
		if multi {
			if err := usdtlink.PrepareSpec(spec, nil); err != nil {
				t.Fatal(err)
			}
		}
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer coll.Close()
		ls, err := usdtlink.AttachCollection(spec, coll, &usdtlink.Options{Cookie: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.Links) != 2 || ls.Programs[0] != "on_consts" || ls.Programs[1] != "on_rip" {
			t.Fatalf("attached %v", ls.Programs)
		}
		for _, l := range ls.Links {
			if l.Multi() != multi {
				t.Errorf("Multi() = %v, program loaded for uprobe_multi: %v", l.Multi(), multi)
			}
		}
		tr.Do(t, "fire")
		seen := coll.Maps["seen"]
		for k, want := range []int64{-42, 0x0102030405060708, 42 + 1000, 0} {
			var v int64
			if err := seen.Lookup(uint32(k), &v); err != nil {
				t.Fatal(err)
			}
			if v != want {
				t.Errorf("multi %v: seen[%d] = %#x, want %#x", multi, k, v, want)
			}
		}
		if err := ls.Close(); err != nil {
			t.Error(err)
		}
		if err := ls.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

// TestPrepareSpecAlone loads the committed example object (built with
// __weak defined away, as bpf2go needs) with cilium/ebpf's own loader and
// PrepareSpec only.
func TestPrepareSpecAlone(t *testing.T) {
	testutil.RequireBPF(t)
	spec, err := ebpf.LoadCollectionSpec(committedObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := usdtlink.PrepareSpec(spec, nil); err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	coll.Close()
}
