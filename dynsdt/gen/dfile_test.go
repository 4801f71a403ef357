package gen

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/internal/testutil"
)

func dprobe(name string, args ...dynsdt.ArgType) dynsdt.ProbeSpec {
	return dynsdt.ProbeSpec{Name: name, Args: args}
}

func drepeat(a dynsdt.ArgType, n int) []dynsdt.ArgType {
	s := make([]dynsdt.ArgType, n)
	for i := range s {
		s[i] = a
	}
	return s
}

// dFiles are testdata/dfile/*.d and what ParseD must make of them.
var dFiles = map[string][]dynsdt.ProviderSpec{
	"interp.d": {{Name: "interp", Probes: []dynsdt.ProbeSpec{
		dprobe("function__entry", dynsdt.String, dynsdt.String, dynsdt.Int32),
		dprobe("function__return", dynsdt.String, dynsdt.String, dynsdt.Int32),
		dprobe("instance__new__start", dynsdt.String, dynsdt.String),
		dprobe("instance__new__done", dynsdt.String, dynsdt.String),
		dprobe("line", dynsdt.String, dynsdt.String, dynsdt.Int32),
		dprobe("heap__collect__start", dynsdt.Int32),
		dprobe("heap__collect__done", dynsdt.Int64),
		dprobe("module__load__start", dynsdt.String),
		dprobe("module__load__done", dynsdt.String, dynsdt.Int32),
		dprobe("audit", dynsdt.String, dynsdt.Pointer),
		dprobe("ready"),
	}}},
	"database.d": {{Name: "dbserver", Probes: []dynsdt.ProbeSpec{
		dprobe("txn__begin", dynsdt.Uint32),
		dprobe("txn__commit", dynsdt.Uint32),
		dprobe("txn__abort", dynsdt.Uint32),
		dprobe("latch__acquire", dynsdt.String, dynsdt.Int32),
		dprobe("latch__release", dynsdt.String),
		dprobe("latch__wait__start", dynsdt.String, dynsdt.Int32),
		dprobe("latch__wait__done", dynsdt.String, dynsdt.Int32),
		dprobe("latch__try__acquire", dynsdt.String, dynsdt.Int32),
		dprobe("latch__try__acquire__fail", dynsdt.String, dynsdt.Int32),
		dprobe("lock__wait__start", dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Int32),
		dprobe("lock__wait__done", dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Int32),
		dprobe("stmt__parse__start", dynsdt.String),
		dprobe("stmt__parse__done", dynsdt.String),
		dprobe("stmt__execute__start"),
		dprobe("stmt__execute__done"),
		dprobe("sort__start", dynsdt.Int32, dynsdt.Uint8, dynsdt.Int32, dynsdt.Int32, dynsdt.Uint8, dynsdt.Int32),
		dprobe("sort__done", dynsdt.Uint8, dynsdt.Int64),
		dprobe("page__read__start", dynsdt.Int32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Int32, dynsdt.Uint8),
		dprobe("page__read__done", dynsdt.Int32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Int32, dynsdt.Uint8, dynsdt.Uint8),
		dprobe("page__flush__start", dynsdt.Int32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32, dynsdt.Uint32),
		dprobe("page__sync__written", dynsdt.Int32),
		dprobe("deadlock__found"),
		dprobe("checkpoint__start", dynsdt.Int32),
		dprobe("checkpoint__done", dynsdt.Int32, dynsdt.Int32, dynsdt.Int32, dynsdt.Int32, dynsdt.Int32),
		dprobe("log__insert", dynsdt.Uint8, dynsdt.Uint8),
		dprobe("log__switch"),
		dprobe("log__buffer__write__dirty__start"),
		dprobe("log__buffer__write__dirty__done"),
	}}},
	"web.d": {{Name: "webrt", Probes: []dynsdt.ProbeSpec{
		dprobe("gc__start", dynsdt.Int32, dynsdt.Int32, dynsdt.Pointer),
		dprobe("gc__done", dynsdt.Int32, dynsdt.Int32, dynsdt.Pointer),
		dprobe("net__server__connection", dynsdt.Pointer, dynsdt.String, dynsdt.Int32, dynsdt.Int32),
		dprobe("http__server__request", dynsdt.Pointer, dynsdt.Pointer, dynsdt.String, dynsdt.Int32, dynsdt.String, dynsdt.String, dynsdt.Int32),
		dprobe("http__client__response", dynsdt.Pointer, dynsdt.String, dynsdt.Int32, dynsdt.Int32),
	}}},
	"types.d": {
		{Name: "types", Probes: []dynsdt.ProbeSpec{
			dprobe("strings", drepeat(dynsdt.String, 5)...),
			dprobe("int8", drepeat(dynsdt.Int8, 3)...),
			dprobe("uint8", drepeat(dynsdt.Uint8, 2)...),
			dprobe("int16", drepeat(dynsdt.Int16, 4)...),
			dprobe("uint16", drepeat(dynsdt.Uint16, 3)...),
			dprobe("int32", drepeat(dynsdt.Int32, 5)...),
			dprobe("uint32", drepeat(dynsdt.Uint32, 3)...),
			dprobe("int64", drepeat(dynsdt.Int64, 7)...),
			dprobe("uint64", drepeat(dynsdt.Uint64, 5)...),
			dprobe("bools", drepeat(dynsdt.Bool, 2)...),
			dprobe("pointers", drepeat(dynsdt.Pointer, 8)...),
		}},
		{Name: "empty", Probes: []dynsdt.ProbeSpec{dprobe("none")}},
	},
}

func parseDFile(t *testing.T, name string) []dynsdt.ProviderSpec {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/dfile", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	provs, err := ParseD(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return provs
}

func TestParseDTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/dfile/*.d")
	if err != nil || len(files) != len(dFiles) {
		t.Fatalf("testdata/dfile/*.d: have %d files (%v), want %d", len(files), err, len(dFiles))
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := dFiles[name]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			have := parseDFile(t, name)
			if !reflect.DeepEqual(have, want) {
				t.Errorf("have %+v\nwant %+v", have, want)
			}
		})
	}
}

// dErrors are inputs ParseD rejects, and where.
var dErrors = []struct {
	name      string
	src       string
	line, col int
}{
	{"empty", "", 1, 1},
	{"only comments", "/* nothing */\n// here\n", 3, 1},
	{"unterminated comment", "provider p {\n/* probe", 2, 1},
	{"no brace", "provider p probe x();", 1, 12},
	{"no name", "provider { probe x(); };", 1, 10},
	{"not provider", "\n  probes p {};", 2, 3},
	{"translator", "translator conn_t < struct c *p > { fd = p->fd; };\nprovider p { probe x(); };", 1, 1},
	{"inline", "inline int X = 1;", 1, 1},
	{"typedef", "typedef struct { int x; } c_t;", 1, 1},
	{"unclosed provider", "provider p {\n\tprobe x();\n", 3, 1},
	{"missing semicolon", "provider p {\n\tprobe x()\n\tprobe y();\n};", 3, 2},
	{"missing paren", "provider p { probe x; };", 1, 21},
	{"duplicate probe", "provider p {\n\tprobe x(int);\n\tprobe x(long);\n};", 3, 8},
	{"duplicate provider", "provider p { };\nprovider p { };", 2, 1},
	{"too many args", "provider p { probe x(" + strings.Repeat("int, ", dynsdt.MaxArgs) + "int); };", 1, 20},
	{"unknown type", "provider p {\n\tprobe x(int, Oid);\n};", 2, 15},
	{"float", "provider p { probe x(double); };", 1, 22},
	{"long double", "provider p { probe x(long double); };", 1, 22},
	{"struct by value", "provider p { probe x(struct s); };", 1, 22},
	{"void arg", "provider p { probe x(int, void); };", 1, 27},
	{"void name", "provider p { probe x(void v); };", 1, 22},
	{"signed unsigned", "provider p { probe x(signed unsigned); };", 1, 22},
	{"short long", "provider p { probe x(short long); };", 1, 22},
	{"long long long", "provider p { probe x(long long long); };", 1, 22},
	{"char int", "provider p { probe x(char int); };", 1, 22},
	{"bool pointer typo", "provider p { probe x(bool int); };", 1, 22},
	{"type after name", "provider p { probe x(int n m); };", 1, 28},
	{"array", "provider p { probe x(int a[4]); };", 1, 27},
	{"star first", "provider p { probe x(*p); };", 1, 22},
	{"number", "provider p { probe x(4); };", 1, 22},
	{"variadic", "provider p { probe x(int, ...); };", 1, 27},
	{"trailing comma", "provider p { probe x(int,); };", 1, 26},
	{"keyword param", "provider p { probe x(int probe); };", 1, 26},
	{"unclosed translation", "provider p { probe x(int) : (int; };", 1, 29},
	{"if", "#ifdef X\nprovider p {};\n#endif", 1, 2},
	{"function macro", "#define T(x) int\nprovider p {};", 1, 9},
	{"define without name", "#define\nprovider p {};", 1, 2},
	{"undef two", "#undef A B\nprovider p {};", 1, 2},
	{"unknown directive", "#frobnicate\nprovider p {};", 1, 2},
	{"unterminated string", "#include \"x.h\nprovider p {};", 1, 10},
	{"recursive macros", "#define A B B\n#define B A A\nprovider p { probe x(A); };", 3, 22},
	{"macro bomb", "#define A B B B B\n#define B C C C C\n#define C D D D D\n#define D E E E E\n#define E F F F F\n#define F G G G G\n#define G H H H H\n#define H int\nprovider p { probe x(A); };", 9, 22},
	{"non-ASCII", "provider p { probe é(); };", 1, 20},
}

func TestParseDErrors(t *testing.T) {
	for _, tt := range dErrors {
		t.Run(tt.name, func(t *testing.T) {
			provs, err := ParseD(strings.NewReader(tt.src), "x.d")
			var perr *ParseError
			if !errors.As(err, &perr) {
				t.Fatalf("have %+v, %v; want a *ParseError", provs, err)
			}
			if provs != nil || perr.File != "x.d" || perr.Line != tt.line || perr.Col != tt.col {
				t.Errorf("have %+v at x.d:%d:%d (%v); want nil at x.d:%d:%d", provs, perr.Line, perr.Col, err, tt.line, tt.col)
			}
		})
	}
}

func TestParseDAccepts(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []dynsdt.ProviderSpec
	}{
		{"no trailing semicolon", "provider p { probe x(); }", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x")}}}},
		{"empty provider", "provider p {};", []dynsdt.ProviderSpec{{Name: "p"}}},
		{"stray semicolons", ";provider p { ; probe x(); ; };;", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x")}}}},
		{"macro in macro", "#define A B\n#define B unsigned long\nprovider p { probe x(A); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Uint64)}}}},
		{"self-referencing macro", "#define int int\nprovider p { probe x(int); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Int32)}}}},
		{"undef", "#define N int\n#undef N\n#define N long\nprovider p { probe x(N); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Int64)}}}},
		{"macro names the provider", "#define PROV app\nprovider PROV { probe x(); };", []dynsdt.ProviderSpec{{Name: "app", Probes: []dynsdt.ProbeSpec{dprobe("x")}}}},
		{"continued directive", "#define T unsigned \\\n  short\nprovider p { probe x(T); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Uint16)}}}},
		{"comment in directive", "#define T /* a\n comment */ char\nprovider p { probe x(T); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Int8)}}}},
		{"object macro with paren", "#define T (int)\nprovider p { probe y(); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("y")}}}},
		{"pointer qualifiers", "provider p { probe x(volatile int * restrict const p, char * const * q); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Pointer, dynsdt.Pointer)}}}},
		{"twelve args", "provider p { probe x(" + strings.Repeat("int, ", dynsdt.MaxArgs-1) + "int); };", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", drepeat(dynsdt.Int32, dynsdt.MaxArgs)...)}}}},
		{"CRLF", "provider p {\r\n\tprobe x(int);\r\n};\r\n", []dynsdt.ProviderSpec{{Name: "p", Probes: []dynsdt.ProbeSpec{dprobe("x", dynsdt.Int32)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := ParseD(strings.NewReader(tt.src), "x.d")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
		})
	}
}

func TestParseDTooLarge(t *testing.T) {
	src := "provider p {};" + strings.Repeat(" ", maxDSize)
	_, err := ParseD(strings.NewReader(src), "big.d")
	var perr *ParseError
	if !errors.As(err, &perr) {
		t.Fatalf("have %v, want a *ParseError", err)
	}
}

func TestParseErrorString(t *testing.T) {
	have := (&ParseError{File: "a.d", Line: 3, Col: 7, Msg: "expected ';'"}).Error()
	if want := "a.d:3:7: expected ';'"; have != want {
		t.Errorf("have %q, want %q", have, want)
	}
}

// TestDFilesWithSystemtapDtrace checks probe names and argument counts
// against systemtap's dtrace -C -h, a .d parser we did not write. Its
// fallback parser counts "(void)" as one argument, so only the files its
// pyparsing grammar accepts are compared.
func TestDFilesWithSystemtapDtrace(t *testing.T) {
	dtrace := testutil.RequireTool(t, "dtrace")
	probeRE := regexp.MustCompile(`DTRACE_PROBE([0-9]*) \((\w+), (\w+)`)
	for _, name := range []string{"interp.d", "database.d", "web.d"} {
		t.Run(name, func(t *testing.T) {
			src, err := filepath.Abs(filepath.Join("testdata/dfile", name))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.h")
			cmd := exec.Command(dtrace, "-C", "-h", "-s", src, "-o", out)
			cmd.Dir = t.TempDir() // dtrace -C writes a temporary file into its working directory
			if msg, err := cmd.CombinedOutput(); err != nil || len(msg) != 0 {
				t.Fatalf("dtrace: %v: %s", err, msg)
			}
			h, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var have, want []string
			for _, m := range probeRE.FindAllStringSubmatch(string(h), -1) {
				n, _ := strconv.Atoi(m[1]) // "DTRACE_PROBE (" has no count
				have = append(have, m[2]+":"+m[3]+"/"+strconv.Itoa(n))
			}
			for _, prov := range parseDFile(t, name) {
				for _, pr := range prov.Probes {
					want = append(want, prov.Name+":"+pr.Name+"/"+strconv.Itoa(len(pr.Args)))
				}
			}
			if !reflect.DeepEqual(have, want) {
				t.Errorf("dtrace -h has %v\nParseD has %v", have, want)
			}
		})
	}
}
