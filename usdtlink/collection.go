package usdtlink

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
)

// PrepareSpec readies a CollectionSpec compiled against <bpf/usdt.bpf.h>
// for loading with cilium/ebpf; call it before NewCollection or
// LoadAndAssign.
//
//   - usdt.bpf.h reads the __kconfig extern LINUX_HAS_BPF_COOKIE, which
//     cilium/ebpf does not know (it looks for a CONFIG_ option and fails):
//     PrepareSpec points the reads of an object's only .kconfig variable,
//     LINUX_HAS_BPF_COOKIE, at a map of its own (KconfigMap) holding 1. An
//     object with other .kconfig variables is refused. A kernel without
//     bpf_get_attach_cookie gives an error wrapping ebpf.ErrNotSupported.
//   - usdt.bpf.h's helpers (bpf_usdt_arg, bpf_usdt_arg_cnt,
//     bpf_usdt_cookie, bpf_usdt_arg_size) are __hidden global functions,
//     which libbpf turns static when it loads an object: the verifier
//     checks a global function alone, assuming nothing of its pointer
//     arguments, and rejects them. PrepareSpec gives them static linkage.
//     (LoadCollectionSpec does so for every hidden function.)
//   - programs in "usdt" sections get the uprobe_multi attach type when
//     the kernel has uprobe_multi and opts.Classic is false (opts nil),
//     as libbpf does, so that Attach can attach all locations with one
//     link; with opts.Classic they get the generic attach type. The kernel takes classic
//     uprobe links only for the one and uprobe_multi links only for the
//     other. Calling PrepareSpec again on a prepared spec only sets the
//     attach type.
//
// Of opts only Classic counts; the same Options go to Attach.
func PrepareSpec(spec *ebpf.CollectionSpec, opts *Options) error {
	if err := features.HaveProgramHelper(ebpf.Kprobe, asm.FnGetAttachCookie); err != nil {
		return fmt.Errorf("BPF cookies: %w", err)
	}
	if err := fillKconfig(spec); err != nil {
		return err
	}
	staticHidden(spec, usdtHelpers)
	multi := (opts == nil || !opts.Classic) && features.HaveBPFLinkUprobeMulti() == nil
	for _, p := range spec.Programs {
		if _, ok := usdtSection(p.SectionName); !ok || p.Type != ebpf.Kprobe {
			continue
		}
		if multi {
			p.AttachType = ebpf.AttachTraceUprobeMulti
		} else if p.AttachType == ebpf.AttachTraceUprobeMulti {
			p.AttachType = ebpf.AttachNone
		}
	}
	return nil
}

// usdtHelpers are the __hidden functions of usdt.bpf.h.
var usdtHelpers = map[string]bool{"bpf_usdt_arg": true, "bpf_usdt_arg_cnt": true, "bpf_usdt_cookie": true, "bpf_usdt_arg_size": true}

// KconfigMap is the map PrepareSpec adds for LINUX_HAS_BPF_COOKIE.
const KconfigMap = "usdtlink_kcfg"

// fillKconfig replaces the .kconfig reads of spec's programs (dword loads
// of a map value without a map name: cilium/ebpf's representation before
// it links .kconfig) with reads of KconfigMap.
func fillKconfig(spec *ebpf.CollectionSpec) error {
	if spec.Types == nil {
		return nil
	}
	var ds *btf.Datasec
	if err := spec.Types.TypeByName(".kconfig", &ds); errors.Is(err, btf.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf(".kconfig: %w", err)
	}
	if len(ds.Vars) != 1 || ds.Size == 0 {
		return fmt.Errorf(".kconfig: %d variables, only a lone LINUX_HAS_BPF_COOKIE is supported", len(ds.Vars))
	}
	v, ok := ds.Vars[0].Type.(*btf.Var)
	if !ok || v.Name != "LINUX_HAS_BPF_COOKIE" || ds.Vars[0].Size == 0 || ds.Vars[0].Offset+ds.Vars[0].Size > ds.Size {
		return fmt.Errorf(".kconfig: variable %v, only a lone LINUX_HAS_BPF_COOKIE is supported", ds.Vars[0].Type)
	}
	data := make([]byte, ds.Size)
	data[ds.Vars[0].Offset] = 1 // little-endian: 1 in any integer size
	found := false
	for _, p := range spec.Programs {
		for i := range p.Instructions {
			ins := &p.Instructions[i]
			if !ins.OpCode.IsDWordLoad() || ins.Src != asm.PseudoMapValue || ins.Reference() != "" {
				continue
			}
			n := asm.LoadMapValue(ins.Dst, 0, ds.Vars[0].Offset).WithReference(KconfigMap).WithSource(ins.Source())
			if sym := ins.Symbol(); sym != "" {
				n = n.WithSymbol(sym)
			}
			if fn := btf.FuncMetadata(ins); fn != nil {
				n = btf.WithFuncMetadata(n, fn)
			}
			*ins = n
			found = true
		}
	}
	if found {
		spec.Maps[KconfigMap] = &ebpf.MapSpec{
			Name:       KconfigMap,
			Type:       ebpf.Array,
			KeySize:    4,
			ValueSize:  ds.Size,
			MaxEntries: 1,
			Contents:   []ebpf.MapKV{{Key: uint32(0), Value: data}},
		}
	}
	return nil
}

// usdtSection reports whether sec is a libbpf USDT section ("usdt",
// "usdt.s", or either followed by "/PATH:PROVIDER:NAME") and returns what
// follows the slash.
func usdtSection(sec string) (string, bool) {
	for _, pre := range []string{"usdt.s", "usdt"} {
		if sec == pre {
			return "", true
		}
		if rest, ok := strings.CutPrefix(sec, pre+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

// ParseSection splits a libbpf section name "usdt/PATH:PROVIDER:NAME" (or
// "usdt.s/...") into its parts. ok is false for other sections and for a
// bare "usdt", which libbpf attaches only when asked by hand.
func ParseSection(sec string) (path, provider, name string, ok bool) {
	rest, isUSDT := usdtSection(sec)
	if !isUSDT || rest == "" {
		return "", "", "", false
	}
	// PATH may hold ':' only if PROVIDER and NAME do not: split from the
	// right.
	j := strings.LastIndexByte(rest, ':')
	if j <= 0 {
		return "", "", "", false
	}
	i := strings.LastIndexByte(rest[:j], ':')
	if i <= 0 || i+1 == j || j+1 == len(rest) {
		return "", "", "", false
	}
	return rest[:i], rest[i+1 : j], rest[j+1:], true
}

// AttachCollection attaches every program of coll whose section in spec is
// "usdt/PATH:PROVIDER:NAME", as libbpf's skeletons do, with Attach and
// coll's __bpf_usdt_specs map. Programs in a bare "usdt" section are
// skipped: attach them with Attach. On failure nothing stays attached. The
// result closes all links.
func AttachCollection(spec *ebpf.CollectionSpec, coll *ebpf.Collection, opts *Options) (*Links, error) {
	specs := coll.Maps[SpecsMap]
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	ls := &Links{}
	for _, n := range names {
		path, provider, name, ok := ParseSection(spec.Programs[n].SectionName)
		if !ok {
			continue
		}
		prog := coll.Programs[n]
		if prog == nil || specs == nil {
			ls.Close()
			return nil, fmt.Errorf("program %s: not in the collection, or no %s map", n, SpecsMap)
		}
		l, err := Attach(prog, specs, path, provider, name, opts)
		if err != nil {
			ls.Close()
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		ls.Links = append(ls.Links, l)
		ls.Programs = append(ls.Programs, n)
	}
	return ls, nil
}

// Links are the Links of AttachCollection, one per program, in the order
// of Programs.
type Links struct {
	Programs []string
	Links    []*Link
}

// Close closes every link. Safe to call twice.
func (ls *Links) Close() error {
	var errs []error
	for _, l := range ls.Links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
