package btprint

import "github.com/usdtkit/usdtkit/internal/lang/printf"

// AppendPrintf appends printf's output as bpftrace writes it: the
// formatted text as is, or {"type": "printf", "data": "…"} in JSON.
func AppendPrintf(dst []byte, f *printf.Format, args []printf.Arg, out Output) []byte {
	if out != OutputJSON {
		return f.Append(dst, args)
	}
	return appendMessage(dst, "printf", f.Append(nil, args), out)
}
