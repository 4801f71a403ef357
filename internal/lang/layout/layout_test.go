package layout

import "testing"

func TestHistIndex(t *testing.T) {
	for v, want := range map[int64]int{-1 << 63: 0, -1: 0, 0: 1, 1: 2, 2: 3, 3: 3, 4: 4, 1023: 11, 1024: 12, 1<<32 - 1: 33, 1 << 32: 34, 1<<63 - 1: 64} {
		if have := HistIndex(v); have != want {
			t.Errorf("HistIndex(%d) = %d, want %d", v, have, want)
		}
	}
}

func TestLinearRange(t *testing.T) {
	r := LinearRange{Min: 5, Max: 20, Step: 5}
	for v, want := range map[int64]int{-1: 0, 4: 0, 5: 1, 9: 1, 10: 2, 19: 3, 20: 4, 1 << 40: 4} {
		if have := r.Index(v); have != want {
			t.Errorf("%+v.Index(%d) = %d, want %d", r, v, have, want)
		}
	}
	if n := r.Buckets(); n != 5 {
		t.Errorf("Buckets() = %d, want 5", n)
	}
}
