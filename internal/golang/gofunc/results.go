package gofunc

import (
	"github.com/usdtkit/usdtkit/internal/golang/goabi"
)

// placeResults places fn's results at its RETs by the ABI's rules: DWARF
// gives result variables no location there. The parameters' types are
// needed too, since stack-assigned results follow stack-assigned
// parameters.
func (b *Binary) placeResults(fn *Func, params []paramDIE, results []resultDIE) {
	fail := func(reason string) {
		for _, r := range results {
			fn.Results = append(fn.Results, unreadable(r.name, r.typ, reason))
		}
	}
	conv := func(t paramDIE) (*goabi.Type, bool) {
		if t.err != nil || t.typ == nil {
			return nil, false
		}
		at, err := goabi.FromDWARF(t.typ)
		return at, err == nil
	}
	var pts, rts []*goabi.Type
	for _, p := range params {
		at, ok := conv(p)
		if !ok {
			fail("the type of parameter " + p.name + " is unknown, so the results' places are too")
			return
		}
		pts = append(pts, at)
	}
	for _, r := range results {
		at, ok := conv(paramDIE(r))
		if !ok {
			fail("the type of result " + r.name + " is unknown")
			return
		}
		rts = append(rts, at)
	}
	frame, err := goabi.Assign(b.Machine, pts, rts)
	if err != nil {
		fail("ABI assignment: " + err.Error())
		return
	}
	// At a RET the stack pointer is back where it was at the entry.
	base := goabi.StackArgsOffset(b.Machine)
	for i, r := range results {
		a := frame.Results[i]
		var words []Word
		reason := ""
		if a.Stack {
			words = stackWords(base+a.StackOffset, r.typ.Size())
		} else {
			for _, p := range a.Pieces {
				name, ok := goabi.PtRegsName(b.Machine, p.Reg)
				if !ok {
					reason = "in register " + p.Reg.Name(b.Machine) + ", which a uprobe cannot read"
					break
				}
				words = append(words, Word{Reg: name, Size: p.Size})
			}
		}
		fn.Results = append(fn.Results, b.values(r.name, r.typ, words, reason)...)
	}
}
