package dynsdt

import "strconv"

// machineAArch64 is arm64: 64 KiB segment alignment (the largest page size
// Linux supports there, so the object maps on 4, 16 and 64 KiB kernels),
// the stub "nop; ret", arguments in AAPCS64's x0..x7, then on the stack.
var machineAArch64 = machine{
	page:      0x10000,
	stub:      func(Site) []byte { return stubAArch64 },
	fill:      0, // 00000000 is udf #0, permanently undefined
	appendArg: appendArgAArch64,
}

// stubAArch64 is nop (d503201f) then ret (d65f03c0), little-endian.
var stubAArch64 = []byte{0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6}

// numRegsAArch64 is the number of integer argument registers, x0..x7.
const numRegsAArch64 = 8

// appendArgAArch64 appends the spec of argument i at the stub's entry:
// "-4@x0" for an int32 in the first register, "8@[sp, 8]" for the 10th
// argument.
//
// Registers are always named by their 64-bit x name, also for arguments of
// 1, 2 or 4 bytes: the size before "@" tells a tracer to take the low bytes
// of the register and extend them, and libbpf (calc_pt_regs_off) accepts
// only x0..x30 and sp, not w0. The link register holds the return address,
// so at the entry the stack arguments start at [sp], one 8-byte slot each
// (AAPCS64 rounds smaller arguments up to 8 bytes), the value in the slot's
// low bytes.
func appendArgAArch64(dst []byte, i int, t ArgType) []byte {
	dst = appendSizePrefix(dst, t)
	if i < numRegsAArch64 {
		return strconv.AppendInt(append(dst, 'x'), int64(i), 10)
	}
	if i == numRegsAArch64 {
		return append(dst, "[sp]"...)
	}
	dst = strconv.AppendInt(append(dst, "[sp, "...), int64(8*(i-numRegsAArch64)), 10)
	return append(dst, ']')
}
