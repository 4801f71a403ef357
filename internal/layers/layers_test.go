package layers

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/usdtkit/usdtkit/"

// layer is each package's layer, as docs/architecture.md lists them: a
// package imports only packages of its own layer or a lower one. A new
// package must be given its layer here.
var layer = map[string]int{
	// 1. ELF files and processes.
	"elfnotes": 1, "internal/elf/symtab": 1, "internal/elf/insn": 1, "internal/proc/procfs": 1,
	"internal/elf/ldso": 1, "internal/elf/cparams": 1, "internal/escape": 1, "internal/golang/goabi": 1,
	// 2. What can be probed.
	"sdt": 2, "uprobe": 2, "uprobe/gosig": 2, "internal/proc/target": 2, "internal/golang/gofunc": 2,
	// 3. BPF building blocks.
	"internal/bpf/argread": 3, "internal/bpf/usdtargs": 3, "internal/bpf/stackcap": 3, "internal/bpf/features": 3,
	"internal/bpf/attach": 3,
	// 4. The language and what its runs need.
	"internal/lang/printf": 4, "internal/lang/layout": 4, "internal/lang/btlang": 4, "internal/lang/btgen": 4, "internal/lang/btrun": 4, "internal/lang/btprint": 4,
	"internal/stacks/symbolize": 4, "internal/stacks/unwind": 4, "internal/lang/flame": 4, "internal/proc/launch": 4,
	// 5. Public cores.
	"trace": 5, "usdtlink": 5, "dynsdt": 5, "dynsdt/gen": 5, "dynsdt/postlink": 5, "agent": 5,
	// 6. Commands, examples, benchmarks, test helpers.
	"cmd/usdtkit": 6, "cmd/usdtkit-agent": 6, "cmd/libstapsdt": 6,
	"examples": 6, "bench": 6, "internal/layers": 6,
	// Test helpers, imported by tests only.
	"internal/testutil": 6, "internal/tracetest": 6, "internal/bpf/stackcap/stacktest": 6, "internal/elf/symtab/symtabtest": 6,
}

// noDeps are packages that must not link a dependency at all, directly
// or through others: why, and the prefixes they must not reach.
var noDeps = []struct {
	pkg, why string
	banned   []string
}{
	{"elfnotes", "the ELF reader is the standard library only", []string{"github.com/", "golang.org/"}},
	{"sdt", "listing probes loads no BPF", []string{"github.com/cilium/ebpf"}},
	{"uprobe", "listing functions loads no BPF and no DWARF reader", []string{"github.com/cilium/ebpf", "github.com/go-delve/"}},
	{"internal/lang/btlang", "the front end runs without a kernel", []string{"github.com/cilium/ebpf"}},
	{"dynsdt", "an instrumented program links no BPF loader", []string{"github.com/cilium/ebpf", "github.com/go-delve/"}},
	{"dynsdt", "an instrumented program links no code generator; those are in dynsdt/gen", []string{"go/parser", "go/format", "go/printer", "regexp"}},
	{"internal/lang/btgen", "codegen does not import the printer", []string{module + "internal/lang/btprint"}},
	{"internal/lang/btlang", "the front end does not import the printer", []string{module + "internal/lang/btprint"}},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", module+"...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// layerOf is the layer of a package of this module: its own entry, or
// the entry of the nearest parent folder listed (examples/…, bench/…,
// internal/elf/symtab/symtabtest).
func layerOf(path string) (int, bool) {
	for p := path; p != "."; p = parent(p) {
		if l, ok := layer[p]; ok {
			return l, true
		}
	}
	return 0, false
}

func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func TestLayers(t *testing.T) {
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		l, ok := layerOf(name)
		if !ok {
			t.Errorf("%s: in no layer; give it one in layers_test.go and docs/architecture.md", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if dl, _ := layerOf(dep); dl > l {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only its own layer or lower ones", name, l, dep, dl)
			}
		}
	}
}

func TestNoDeps(t *testing.T) {
	pkgs := listPackages(t)
	for _, rule := range noDeps {
		i := slices.IndexFunc(pkgs, func(p pkg) bool { return p.ImportPath == module+rule.pkg })
		if i < 0 {
			t.Errorf("%s: no such package", rule.pkg)
			continue
		}
		for _, d := range pkgs[i].Deps {
			for _, b := range rule.banned {
				if strings.HasPrefix(d, b) {
					t.Errorf("%s links %s (%s)", rule.pkg, d, rule.why)
				}
			}
		}
	}
}
