package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/dynsdt"
	"github.com/usdtkit/usdtkit/dynsdt/postlink"
	"github.com/usdtkit/usdtkit/internal/escape"
)

func newLinkCmd() *cobra.Command {
	var site string
	cmd := &cobra.Command{
		Use:   "link BIN...",
		Short: "Add the notes of static Go probes (usdtkit gen --static) to linked executables",
		Long: `Find the static probes that usdtkit gen --static compiled into each Go
executable and add their .note.stapsdt notes, so that readelf -n, tplist,
bpftrace and usdtkit find them by path and attach to every process of it.
Each file is changed in place: the notes are appended, the stubs whose
site kind changes (--site) are rewritten, 16 bytes each, and the ELF
header, written last, points at the notes; a running executable is
replaced by a new file instead. A file without static probes, or that
already has their notes and sites, is left as it is. go build -toolexec 'usdtkit
toolexec' runs this step as part of the build.

--site sets the kind of instruction at the probe sites of x86-64 stubs:
nop (a 1-byte nop, trapped at every hit: as cheap as a sys/sdt.h probe),
nop5 (the 5-byte nop Linux 6.18 optimizes into a call to its uprobe
trampoline) or nop10 (the form later kernels optimize; 6.18 and older
cannot probe it). auto, the default, takes the USDTKIT_SITE environment
variable, else the kind that suits the running kernel (nop on every
kernel so far); usdtkit toolexec uses auto.`,
		Example: `  go build -o server . && usdtkit link server
  go build -toolexec 'usdtkit toolexec' -o server .`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := dynsdt.ParseSite(site)
			if err != nil {
				return fmt.Errorf("--site: %w", err)
			}
			for _, path := range args {
				res, err := postlink.File(path, &postlink.Options{Site: kind})
				if err != nil {
					return err
				}
				reportLink(cmd.OutOrStdout(), path, res)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&site, "site", "auto", "kind of x86-64 probe site: auto, nop, nop5 or nop10")
	return cmd
}

// reportLink prints what the step did to one file.
func reportLink(w io.Writer, path string, res *postlink.Result) {
	switch {
	case len(res.Probes) == 0 && len(res.Missing) == 0:
		fmt.Fprintf(w, "%s: no static probes\n", path)
	case res.Changed && res.Rewritten > 0:
		fmt.Fprintf(w, "%s: %d probes, %d sites made %v\n", path, len(res.Probes), res.Rewritten, res.Site)
	case res.Changed:
		fmt.Fprintf(w, "%s: %d probes added\n", path, len(res.Probes))
	default:
		fmt.Fprintf(w, "%s: %d probes, already added\n", path, len(res.Probes))
	}
	for _, m := range res.Missing {
		fmt.Fprintf(w, "%s: %s is never fired by the program (the linker left its stub out)\n", path, escape.Name(m))
	}
}

// toolexecVersion marks the linker's version line under usdtkit toolexec,
// so that the go command's build cache keeps binaries linked with the step
// (by this build of usdtkit: a hash of its executable, and the site kind
// it writes, which USDTKIT_SITE may change) apart from those linked
// without it, by another usdtkit or with another kind.
func toolexecVersion() string {
	id := "unknown"
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				id = fmt.Sprintf("%x", h.Sum(nil)[:8])
			}
			f.Close()
		}
	}
	site := "invalid"
	if k, err := dynsdt.ResolveSite(dynsdt.SiteAuto); err == nil {
		site = k.String()
	}
	return "usdtkit-postlink/" + id + "/site=" + site
}

func newToolexecCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "toolexec TOOL [ARGS...]",
		Short: "Run a Go build tool, adding static probes' notes after the linker (go build -toolexec 'usdtkit toolexec')",
		Long: `For go build -toolexec: runs TOOL with ARGS as the go command asked, and
when TOOL is the linker and it succeeds, runs usdtkit link's step on its
output, so that go build and go install write executables with their
static probes' notes in one command. Other tools run unchanged.`,
		Example:            `  go build -toolexec 'usdtkit toolexec' ./cmd/server`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runToolexec(cmd, args)
		},
	}
}

func runToolexec(cmd *cobra.Command, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return cmd.Help()
	}
	tool, targs := args[0], args[1:]
	c := exec.Command(tool, targs...)
	c.Stdin, c.Stderr = os.Stdin, cmd.ErrOrStderr()
	isLink := strings.TrimSuffix(filepath.Base(tool), ".exe") == "link"
	var version bytes.Buffer
	versionQuery := isLink && len(targs) > 0 && strings.HasPrefix(targs[0], "-V")
	if versionQuery {
		c.Stdout = &version
	} else {
		c.Stdout = cmd.OutOrStdout()
	}
	if err := c.Run(); err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return exitStatus(ee.ExitCode())
		}
		return err
	}
	if versionQuery {
		line := strings.TrimRight(version.String(), "\n")
		if f := strings.Fields(line); len(f) >= 3 && f[1] == "version" && f[2] != "devel" {
			line += " " + toolexecVersion()
		}
		fmt.Fprintln(cmd.OutOrStdout(), line)
		return nil
	}
	if !isLink {
		return nil
	}
	out := ""
	for i, a := range targs {
		if a == "-o" && i+1 < len(targs) {
			out = targs[i+1]
		} else if v, ok := strings.CutPrefix(a, "-o="); ok {
			out = v
		}
	}
	if out == "" {
		return fmt.Errorf("toolexec: the linker's command has no -o")
	}
	res, err := postlink.File(out, nil)
	if err != nil {
		return fmt.Errorf("toolexec: %w", err)
	}
	for _, m := range res.Missing {
		fmt.Fprintf(cmd.ErrOrStderr(), "usdtkit: %s is never fired by the program (the linker left its stub out)\n", escape.Name(m))
	}
	return nil
}
