package trace

import (
	"fmt"
	"io"
)

// Stage names a stage of compilation whose result Program.Dump prints.
type Stage string

const (
	// StageAST is the program as parsed, with probes resolved: one probe
	// block after the other in canonical form (parentheses around every
	// operand that is an operation).
	StageAST Stage = "ast"
	// StageTypes is what type checking resolved: each map's key and
	// value types or aggregation, each block's variables.
	StageTypes Stage = "types"
	// StageBPF is the generated BPF: every map, every program and its
	// instructions.
	StageBPF Stage = "bpf"
)

// Stages are the stages Dump prints, in pipeline order.
var Stages = []Stage{StageAST, StageTypes, StageBPF}

// Dump writes the result of one stage of p's compilation to w.
func (p *Program) Dump(w io.Writer, s Stage) error {
	if p.ast == nil || p.gen == nil {
		return fmt.Errorf("dump: the program was not compiled by Compile")
	}
	var text string
	switch s {
	case StageAST:
		text = p.ast.String()
	case StageTypes:
		text = p.ast.TypesString()
	case StageBPF:
		text = p.gen.Listing()
	default:
		return fmt.Errorf("dump: unknown stage %q (%v)", s, Stages)
	}
	_, err := io.WriteString(w, text)
	return err
}
