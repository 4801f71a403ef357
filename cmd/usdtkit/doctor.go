package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usdtkit/usdtkit/internal/bpf/features"
)

type doctorOptions struct {
	output string
}

func newDoctorCmd() *cobra.Command {
	var o doctorOptions
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what this kernel and these privileges allow a tracer to do",
		Long: `Check what this kernel and these privileges allow: loading BPF programs,
kernel BTF, the uprobe PMU, semaphores (ref_ctr_offset), uprobe_multi links,
BPF cookies, whether 5-byte nop sites are optimized into calls (Linux 6.18+
on x86-64, which pushes below the stack pointer at the site), sleepable string
reads, and bpf_loop, which says how ustack map keys are unwound: with each
object's CFI in the BPF program (trace --unwind cfi-bpf, the default) where the
kernel has it, else with frame pointers.

Each check prints one line: ok or missing, its name, what was found and, when
missing, what usdtkit does without it. With -o json each check is one object:
{"name": "…", "ok": true, "detail": "…", "error": null, "impact": "…"}.

The exit status is 0 when tracing can work at all (BPF programs load and the
kernel has the uprobe PMU), else 1.`,
		Example: `  usdtkit doctor
  sudo usdtkit doctor -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDoctor(cmd, &o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json (one object per line)")
	return cmd
}

func runDoctor(cmd *cobra.Command, o *doctorOptions) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	results := features.Check()
	write := writeChecksText
	if o.output == "json" {
		write = writeChecksJSON
	}
	if err := write(cmd.OutOrStdout(), results); err != nil {
		return err
	}
	if err := features.CanTrace(); err != nil {
		return doctorVerdict(err)
	}
	return nil
}

// doctorVerdict is the one sentence for a machine that cannot trace. It
// does not wrap err: userMessage would add the hint for reading /proc to a
// permission error, and the details are on stdout already.
func doctorVerdict(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return errors.New("tracing is not possible: loading BPF programs needs root or CAP_BPF+CAP_PERFMON")
	}
	return fmt.Errorf("tracing is not possible here: %v", err)
}

func writeChecksText(w io.Writer, results []features.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range results {
		status, found := "ok", r.Detail
		if !r.OK {
			status = "missing"
			if r.Err != nil && found != "" {
				found += ": " + r.Err.Error()
			} else if r.Err != nil {
				found = r.Err.Error()
			}
			found += "; without it: " + r.Impact
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", status, r.Name, found)
	}
	return tw.Flush()
}

// checkJSON is one line of `doctor -o json`. The keys are a documented
// interface (the command's help).
type checkJSON struct {
	Name   string  `json:"name"`
	OK     bool    `json:"ok"`
	Detail string  `json:"detail"`
	Error  *string `json:"error"`
	Impact string  `json:"impact"`
}

func writeChecksJSON(w io.Writer, results []features.Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		c := checkJSON{Name: r.Name, OK: r.OK, Detail: r.Detail, Impact: r.Impact}
		if r.Err != nil {
			msg := r.Err.Error()
			c.Error = &msg
		}
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}
