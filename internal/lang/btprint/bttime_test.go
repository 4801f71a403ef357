package btprint

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

var strftimeFormats = []string{
	"%H:%M:%S\n", "%a %A %b %B %h", "%c|%C|%d|%D|%e|%F", "%g|%G|%V|%U|%W|%u|%w|%j",
	"%I|%l|%k|%p|%P|%r|%R|%T", "%x|%X|%y|%Y|%m|%M|%S|%s", "%z|%Z|%%|%n|%t|%Q|lit", "%",
}

// TestStrftimeMatchesC compares Strftime with C's strftime (built from
// testdata/strftime) in UTC, on dates around year and week boundaries.
func TestStrftimeMatchesC(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	bin := filepath.Join(t.TempDir(), "strftime")
	if out, err := exec.Command(gcc, "-o", bin, filepath.Join("testdata", "strftime", "strftime.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, epoch := range []int64{0, 951782400 /* 2000-02-29 */, 1104451200 /* 2004-12-31 */, 1230681600 /* 2008-12-31 */, 1609459199, 1700000000, 1735603200, 4102444800} {
		tm := time.Unix(epoch, 0).In(time.FixedZone("GMT", 0)) // gmtime names UTC "GMT"
		for _, f := range strftimeFormats {
			want, err := exec.Command(bin, strconv.FormatInt(epoch, 10), f).Output()
			if err != nil {
				t.Fatal(err)
			}
			if have := Strftime(nil, f, tm); string(have) != string(want) {
				t.Errorf("%s %q: have %q, want %q", tm, f, have, want)
			}
		}
	}
}

func TestAppendTime(t *testing.T) {
	tm := time.Date(2026, 11, 24, 1, 2, 3, 0, time.UTC)
	for _, tt := range []struct {
		format string
		out    Output
		want   string
	}{
		{DefaultTimeFormat, OutputText, "01:02:03\n"},
		{DefaultTimeFormat, OutputJSON, `{"type": "time", "data": "01:02:03\n"}` + "\n"},
		{"", OutputText, ""},
		{"%Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S", OutputText, ""},      // 59 bytes fit (want below)
		{"%Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S-----", OutputText, ""}, // 64 bytes do not,
	} {
		want := tt.want
		if tt.format == "%Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S %Y-%m-%d %H:%M:%S" {
			want = "2026-11-24 01:02:03 2026-11-24 01:02:03 2026-11-24 01:02:03"
		}
		if have := string(AppendTime(nil, tt.format, tm, tt.out)); have != want {
			t.Errorf("AppendTime(%q) = %q, want %q", tt.format, have, want)
		}
	}
}
