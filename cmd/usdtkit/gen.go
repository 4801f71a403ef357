package main

import (
	"debug/elf"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/gen"
)

type genOptions struct {
	dir      string
	pkg      string
	provider string
	probes   []string
	arch     string
	site     string
	static   bool
}

func newGenCmd() *cobra.Command {
	var o genOptions
	cmd := &cobra.Command{
		Use:   "gen -o DIR (FILE.d | --provider NAME --probe NAME:TYPES...)",
		Short: "Generate a shared object, C header and Go file that give a program USDT probes",
		Long: `Generate, for each provider of a DTrace provider file (or of the one
declared with --provider and --probe), three files in DIR:

  PROVIDER.so  a shared object holding the probes; calling its function
               PROVIDER_request__start_fire fires probe PROVIDER:request__start
               (every symbol starts with PROVIDER_). It needs
               only the C library: dlopen it from any language's FFI.
  PROVIDER.h   C prototypes, semaphores and PROVIDER_PROBE_ENABLED() macros
  PROVIDER.go  typed Go functions using the dynsdt runtime (no cgo), for
               go:generate: RequestStart(arg0 string, arg1 int32), Load, Close

With --static, it writes instead the Go files of static probes, compiled
into the program: PROVIDER.go (the same API; Load and Close do nothing),
PROVIDER_stubs.go, PROVIDER_other.go and assembly stubs for amd64 and arm64.
Build with go build -toolexec 'usdtkit toolexec' (or run usdtkit link on the
executable) to add the notes tracers read.

--site sets the kind of instruction at the probe sites of the x86-64 shared
object: nop (a 1-byte nop, trapped at every hit: as cheap as a sys/sdt.h
probe), nop5 (the 5-byte nop Linux 6.18 optimizes into a call to its
uprobe trampoline; older kernels trap it as a nop) or nop10 (the form
later kernels optimize; 6.18 and older cannot probe it). auto, the
default, is the kind that suits every kernel so far (nop): the file may run
on any machine, so neither this kernel nor USDTKIT_SITE is consulted.
--site has no effect with --arch arm64 (one kind) or --static (stubs are
nop; usdtkit link --site sets their kind).

FILE.d declares probes by C types: provider myapp { probe request__start(char *, int); };
--probe takes NAME:TYPE,TYPE with types int8..int64, uint8..uint64, bool,
pointer, string and bytes.`,
		Example: `  usdtkit gen -o probes myapp.d
  usdtkit gen -o . --provider myapp --probe 'request__start:string,int64' --probe 'request__done:int64'
  //go:generate usdtkit gen -o . --package probes myapp.d
  usdtkit gen -o . --site nop5 myapp.d
  usdtkit gen --static -o probes --package probes myapp.d && go build -toolexec 'usdtkit toolexec' .`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd, &o, args)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.dir, "output", "o", ".", "directory to write the files to (created if missing)")
	f.StringVar(&o.pkg, "package", "", "package name of the Go file (default: the provider's name)")
	f.StringVar(&o.provider, "provider", "", "name of the provider declared with --probe")
	f.StringArrayVar(&o.probes, "probe", nil, "declare a probe, NAME:TYPE,TYPE,...; repeatable")
	f.StringVar(&o.arch, "arch", "", "architecture of the shared object: amd64 or arm64 (default: this machine's)")
	f.StringVar(&o.site, "site", "auto", "kind of x86-64 probe site in the shared object: auto (nop), nop, nop5 or nop10; no effect with --static or --arch arm64")
	f.BoolVar(&o.static, "static", false, "generate static probes compiled into the Go program (the same Go API; build with go build -toolexec 'usdtkit toolexec', or run usdtkit link on the binary) instead of the shared object, header and run-time Go file")
	return cmd
}

var genArchs = map[string]elf.Machine{"": elf.EM_NONE, "amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func runGen(cmd *cobra.Command, o *genOptions, args []string) error {
	machine, ok := genArchs[o.arch]
	if !ok {
		return fmt.Errorf("--arch %q: want amd64 or arm64", o.arch)
	}
	site, err := dynsdt.ParseSite(o.site)
	if err != nil {
		return fmt.Errorf("--site: %w", err)
	}
	provs, err := genProviders(o, args)
	if err != nil {
		return err
	}
	if o.static && o.arch != "" {
		return fmt.Errorf("--static writes stubs for amd64 and arm64: --arch does not apply")
	}
	if o.pkg != "" && len(provs) > 1 {
		return fmt.Errorf("--package names one Go package, but %s declares %d providers", args[0], len(provs))
	}
	var files []gen.File
	for i := range provs {
		fs, err := gen.Files(&provs[i], &gen.Options{Package: o.pkg, Machine: machine, Static: o.static, Site: site})
		if err != nil {
			return fmt.Errorf("provider %s: %w", provs[i].Name, err)
		}
		files = append(files, fs...)
	}
	paths, err := gen.WriteFiles(o.dir, files)
	for _, path := range paths {
		fmt.Fprintln(cmd.OutOrStdout(), path)
	}
	return err
}

// genProviders returns the providers of the .d file in args, or the one
// declared by --provider and --probe.
func genProviders(o *genOptions, args []string) ([]dynsdt.ProviderSpec, error) {
	if len(args) == 1 {
		if o.provider != "" || len(o.probes) > 0 {
			return nil, fmt.Errorf("give a .d file or --provider and --probe, not both")
		}
		f, err := os.Open(args[0])
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return gen.ParseD(f, args[0])
	}
	if o.provider == "" || len(o.probes) == 0 {
		return nil, fmt.Errorf("give a .d file, or --provider NAME and at least one --probe NAME:TYPES")
	}
	p := dynsdt.ProviderSpec{Name: o.provider}
	for _, s := range o.probes {
		pr, err := dynsdt.ParseProbeSpec(s)
		if err != nil {
			return nil, fmt.Errorf("--probe: %w", err)
		}
		p.Probes = append(p.Probes, pr)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return []dynsdt.ProviderSpec{p}, nil
}
