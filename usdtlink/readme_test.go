package usdtlink_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/usdtlink"
)

// readmeObjects is what bpf2go generates for examples/byo-c/byo.bpf.c,
// as the README's progObjects.
type readmeObjects struct {
	Handle       *ebpf.Program `ebpf:"handle"`
	BpfUsdtSpecs *ebpf.Map     `ebpf:"__bpf_usdt_specs"`
	Events       *ebpf.Map     `ebpf:"events"`
}

func (o *readmeObjects) Close() {
	for _, c := range []interface{ Close() error }{o.Handle, o.BpfUsdtSpecs, o.Events} {
		if c != nil {
			c.Close()
		}
	}
}

// TestREADMEClassic runs the README's usdtlink sequence
// (LoadCollectionSpecFromReader, LoadAndAssign, Attach by PID with a
// cookie) with and without Options.Classic, no attach type set by hand,
// and checks that the probe's event comes with the cookie and that the
// links are of the kind asked for. A program loaded for uprobe_multi
// (PrepareSpec(spec, nil)) is refused Classic with ErrAttachType.
func TestREADMEClassic(t *testing.T) {
	testutil.RequireBPF(t)
	b, err := os.ReadFile(buildBPF(t, false))
	if err != nil {
		t.Fatal(err)
	}
	exe := buildC(t, "testdata/operands.c")
	tr := testutil.StartTracee(t, exe)
	haveMulti := features.HaveBPFLinkUprobeMulti() == nil
	for _, tc := range []struct {
		name      string
		classic   bool
		wantMulti bool
	}{
		{"classic", true, false},
		{"default", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := usdtlink.LoadCollectionSpecFromReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var objs readmeObjects
			if err := spec.LoadAndAssign(&objs, nil); err != nil {
				t.Fatal(err)
			}
			defer objs.Close()
			link, err := usdtlink.Attach(objs.Handle, objs.BpfUsdtSpecs, "", "t", "consts",
				&usdtlink.Options{PID: tr.PID(), Cookie: 42, Classic: tc.classic})
			if err != nil {
				t.Fatal(err)
			}
			defer link.Close()
			if link.Multi() != tc.wantMulti {
				t.Errorf("Multi() = %v, want %v", link.Multi(), tc.wantMulti)
			}
			rd, err := ringbuf.NewReader(objs.Events)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			tr.Do(t, "fire")
			l := &loaded{rd: rd}
			if e := l.read(t, 1)[0]; e.Cookie != 42 || e.Cnt != 5 || e.Args[0] != 42 {
				t.Errorf("event %s, want cookie 42, 5 arguments, arg0 42", e.String())
			}
		})
	}
	t.Run("multi program, classic", func(t *testing.T) {
		spec, err := usdtlink.LoadCollectionSpecFromReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := usdtlink.PrepareSpec(spec, nil); err != nil {
			t.Fatal(err)
		}
		var objs readmeObjects
		if err := spec.LoadAndAssign(&objs, nil); err != nil {
			t.Fatal(err)
		}
		defer objs.Close()
		link, err := usdtlink.Attach(objs.Handle, objs.BpfUsdtSpecs, "", "t", "consts",
			&usdtlink.Options{PID: tr.PID(), Classic: true})
		if err == nil {
			link.Close()
		}
		// Without uprobe_multi in the kernel PrepareSpec keeps the
		// generic attach type, which takes classic links.
		if haveMulti && !errors.Is(err, usdtlink.ErrAttachType) || !haveMulti && err != nil {
			t.Errorf("Classic on a program prepared for uprobe_multi (kernel has it: %v): err %v", haveMulti, err)
		}
		link, err = usdtlink.Attach(objs.Handle, objs.BpfUsdtSpecs, "", "t", "consts", &usdtlink.Options{PID: tr.PID()})
		if err != nil {
			t.Fatal(err)
		}
		defer link.Close()
		if link.Multi() != haveMulti {
			t.Errorf("Multi() = %v on a program prepared for uprobe_multi, kernel has it: %v", link.Multi(), haveMulti)
		}
	})
}
