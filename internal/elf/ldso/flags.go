package ldso

import (
	"debug/elf"
	"fmt"
)

// Flags is the flags word of a cache entry: the library type in the low
// byte and the architecture/ABI it needs in the second byte (glibc
// sysdeps/generic/ldconfig.h FLAG_*).
type Flags int32

const (
	flagTypeMask     Flags = 0x00ff
	flagRequiredMask Flags = 0xff00

	flagLibc4     Flags = 0x0000
	flagELF       Flags = 0x0001
	flagELFLibc5  Flags = 0x0002
	flagELFLibc6  Flags = 0x0003
	flagSPARC64   Flags = 0x0100
	flagIA64      Flags = 0x0200
	flagX8664     Flags = 0x0300
	flagS390x     Flags = 0x0400
	flagPPC64     Flags = 0x0500
	flagMIPSN32   Flags = 0x0600
	flagMIPSN64   Flags = 0x0700
	flagX32       Flags = 0x0800
	flagARMHF     Flags = 0x0900
	flagAArch64   Flags = 0x0a00
	flagARMSF     Flags = 0x0b00
	flagMIPS2008  Flags = 0x0c00
	flagN32_2008  Flags = 0x0d00
	flagN64_2008  Flags = 0x0e00
	flagRISCVSoft Flags = 0x0f00
	flagRISCVDbl  Flags = 0x1000
	flagLArchSoft Flags = 0x1100
	flagLArchDbl  Flags = 0x1200
)

// String describes f the way ldconfig -p does, e.g. "libc6,x86-64".
func (f Flags) String() string {
	var s string
	switch f & flagTypeMask {
	case flagLibc4:
		s = "libc4"
	case flagELF:
		s = "ELF"
	case flagELFLibc5:
		s = "libc5"
	case flagELFLibc6:
		s = "libc6"
	default:
		s = "unknown"
	}
	switch r := f & flagRequiredMask; r {
	case 0:
	case flagSPARC64, flagS390x, flagPPC64, flagMIPSN64:
		s += ",64bit"
	case flagIA64:
		s += ",IA-64"
	case flagX8664:
		s += ",x86-64"
	case flagMIPSN32:
		s += ",N32"
	case flagX32:
		s += ",x32"
	case flagARMHF:
		s += ",hard-float"
	case flagAArch64:
		s += ",AArch64"
	case flagARMSF, flagRISCVSoft:
		s += ",soft-float"
	case flagMIPS2008:
		s += ",nan2008"
	case flagN32_2008:
		s += ",N32,nan2008"
	case flagN64_2008:
		s += ",64bit,nan2008"
	case flagRISCVDbl:
		s += ",double-float"
	case flagLArchSoft:
		s += ",soft-float"
	case flagLArchDbl:
		s += ",double-float"
	default:
		s += fmt.Sprintf(",%d", int32(r))
	}
	return s
}

// arch describes where the libraries of one machine live and how ldconfig
// marks them.
type arch struct {
	// required are the FLAG_REQUIRED_MASK values ldconfig gives this
	// machine's libraries; nil accepts any.
	required []Flags
	// class is the ELF class of its libraries; ELFCLASSNONE accepts any.
	class elf.Class
	// triplets are the Debian multiarch directory names.
	triplets []string
}

// archOf returns what we know of machine m. Unknown machines get a zero
// arch, which filters nothing.
func archOf(m elf.Machine) arch {
	switch m {
	case elf.EM_X86_64:
		// x32 libraries are EM_X86_64 too, but ELFCLASS32 and flagged x32.
		return arch{[]Flags{flagX8664}, elf.ELFCLASS64, []string{"x86_64-linux-gnu"}}
	case elf.EM_386:
		return arch{[]Flags{0}, elf.ELFCLASS32, []string{"i386-linux-gnu"}}
	case elf.EM_AARCH64:
		return arch{[]Flags{flagAArch64}, elf.ELFCLASS64, []string{"aarch64-linux-gnu"}}
	case elf.EM_ARM:
		return arch{[]Flags{flagARMHF, flagARMSF, 0}, elf.ELFCLASS32, []string{"arm-linux-gnueabihf", "arm-linux-gnueabi"}}
	case elf.EM_PPC64:
		return arch{[]Flags{flagPPC64}, elf.ELFCLASS64, []string{"powerpc64le-linux-gnu", "powerpc64-linux-gnu"}}
	case elf.EM_S390:
		return arch{[]Flags{flagS390x}, elf.ELFCLASS64, []string{"s390x-linux-gnu"}}
	case elf.EM_RISCV:
		return arch{[]Flags{flagRISCVDbl, flagRISCVSoft}, elf.ELFCLASS64, []string{"riscv64-linux-gnu"}}
	case elf.EM_LOONGARCH:
		return arch{[]Flags{flagLArchDbl, flagLArchSoft}, elf.ELFCLASS64, []string{"loongarch64-linux-gnu"}}
	case elf.EM_MIPS:
		return arch{[]Flags{0, flagMIPSN32, flagMIPSN64, flagMIPS2008, flagN32_2008, flagN64_2008}, elf.ELFCLASSNONE,
			[]string{"mips64el-linux-gnuabi64", "mipsel-linux-gnu"}}
	}
	return arch{}
}

// hostMachine maps a GOARCH to the ELF machine of its libraries.
func hostMachine(goarch string) elf.Machine {
	switch goarch {
	case "amd64":
		return elf.EM_X86_64
	case "386":
		return elf.EM_386
	case "arm64":
		return elf.EM_AARCH64
	case "arm":
		return elf.EM_ARM
	case "ppc64", "ppc64le":
		return elf.EM_PPC64
	case "s390x":
		return elf.EM_S390
	case "riscv64":
		return elf.EM_RISCV
	case "loong64":
		return elf.EM_LOONGARCH
	case "mips", "mipsle", "mips64", "mips64le":
		return elf.EM_MIPS
	}
	return elf.EM_NONE
}

// accepts reports whether a cache entry with flags f can be loaded on a:
// an ELF glibc library (the loader's _dl_cache_check_flags) for the
// machine's ABI.
func (a arch) accepts(f Flags) bool {
	if t := f & flagTypeMask; t != flagELF && t != flagELFLibc6 {
		return false
	}
	if a.required == nil {
		return true
	}
	for _, r := range a.required {
		if f&flagRequiredMask == r {
			return true
		}
	}
	return false
}

// dirs returns the default library directories for a, in search order.
func (a arch) dirs() []string {
	var dirs []string
	// Debian and Ubuntu configure glibc with the multiarch directories as
	// the system directories; elsewhere they do not exist.
	for _, t := range a.triplets {
		dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t)
	}
	if a.class != elf.ELFCLASS32 {
		dirs = append(dirs, "/lib64", "/usr/lib64")
	}
	return append(dirs, "/lib", "/usr/lib")
}
