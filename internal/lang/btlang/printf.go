package btlang

import "github.com/usdtkit/usdtkit/internal/lang/printf"

// verbAccepts reports whether printf's verb v prints a value of type t: %s
// takes a string, a stack, a probe or a symbol; the others take an
// integer.
func verbAccepts(v printf.Verb, t Type) bool {
	if v.Conv == 'r' || t.Kind == KindBuf {
		return v.Conv == 'r' && t.Kind == KindBuf
	}
	if v.Conv == 's' {
		switch t.Kind {
		case KindString, KindStack, KindProbe, KindSym, KindUsym, KindUsername, KindTimestamp, KindInet:
			return true
		}
		return false
	}
	return t.Kind == KindInt || t.Kind == KindPtr
}
