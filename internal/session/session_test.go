package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/usdtkit/usdtkit/internal/argfetch"
	"github.com/usdtkit/usdtkit/internal/bpfgen"
	"github.com/usdtkit/usdtkit/internal/session"
	"github.com/usdtkit/usdtkit/internal/testutil"
	"github.com/usdtkit/usdtkit/sdt"
)

func TestMain(m *testing.M) { testutil.MainCheckingFDs(m) }

func TestStartInvalid(t *testing.T) {
	if _, err := session.Start(nil); err == nil {
		t.Error("session.Start(nil) succeeded")
	}
	opts := &session.Options{Objects: []session.Object{{Path: "/bin/true", Offsets: []uint64{1, 2}, Cookies: []uint64{0}}}}
	opts.Config.Sites = []bpfgen.Site{{}}
	if _, err := session.Start(opts); err == nil {
		t.Error("Start with fewer cookies than offsets succeeded")
	}
}

// TestLifetime attaches to tracee.c's bench probe, reads one event, detaches,
// drains, and checks that Close may be called twice and ends Read.
func TestLifetime(t *testing.T) {
	testutil.RequireBPF(t)
	bin := testutil.BuildTracee(t, "-O2")
	tc := testutil.StartTracee(t, bin)
	sel, _ := sdt.ParseSelector("tracee:bench")
	probes, err := sdt.List(&sdt.ListOptions{Paths: []string{bin}, Selectors: []sdt.Selector{sel}})
	if err != nil || len(probes) != 1 {
		t.Fatalf("tracee:bench: %v", err)
	}
	loc := probes[0].Locations[0]
	site := bpfgen.Site{}
	for _, a := range loc.Args {
		f, err := argfetch.Fetch(a, loc.Address, nil)
		if err != nil {
			t.Fatal(err)
		}
		site.Args = append(site.Args, f)
	}
	s, err := session.Start(&session.Options{
		Config:  bpfgen.Config{Machine: probes[0].Machine, Sites: []bpfgen.Site{site}},
		Objects: []session.Object{{Path: bin, Offsets: []uint64{loc.Offset}, Cookies: []uint64{0}}},
		PID:     tc.PID(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.Sites() != 1 || !s.Multi() {
		t.Errorf("Sites %d Multi %v, want 1 site through uprobe_multi", s.Sites(), s.Multi())
	}
	tc.Do(t, "loop 3")
	var ev bpfgen.Event
	if err := s.Read(context.Background(), &ev); err != nil || ev.PID != uint32(tc.PID()) || ev.Args[0] != 0 {
		t.Fatalf("Read: %v, event %+v", err, ev)
	}
	if err := s.Detach(); err != nil {
		t.Fatal(err)
	}
	tc.Do(t, "loop 3") // not traced any more
	var rest []uint64
	if err := s.Drain(func(ev *bpfgen.Event) error { rest = append(rest, ev.Args[0]); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rest) != 2 || rest[0] != 1 || rest[1] != 2 {
		t.Errorf("drained %v, want [1 2]", rest)
	}
	if events, updates, err := s.Lost(); err != nil || events != 0 || updates != 0 {
		t.Errorf("Lost: %d, %d, %v", events, updates, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Read(context.Background(), &ev); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if _, _, err := s.Lost(); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Lost after Close: %v, want ErrClosed", err)
	}
}
