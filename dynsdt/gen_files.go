package dynsdt

import (
	"debug/elf"
	"fmt"
)

// GenerateOptions are the options of GenerateFiles; nil means defaults.
type GenerateOptions struct {
	// Package is the Go file's package name. Default: the provider's name.
	Package string
	// Machine is the ELF machine of the shared object, elf.EM_X86_64 or
	// elf.EM_AARCH64. Default: the machine this program runs on.
	Machine elf.Machine
}

// GeneratedFile is a file's base name and contents.
type GeneratedFile struct {
	Name string
	Data []byte
}

// GenerateFiles returns what usdtkit gen writes for p: the shared object
// (Build; named SOName(p.Name), "myapp.so"), its C header ("myapp.h",
// GenerateHeader) and the Go file ("myapp.go", GenerateGo), in that order.
// Errors wrap ErrSpec for a spec Build or GenerateGo rejects and
// ErrUnsupportedMachine for another machine.
func GenerateFiles(p *ProviderSpec, opts *GenerateOptions) ([]GeneratedFile, error) {
	var o GenerateOptions
	if opts != nil {
		o = *opts
	}
	if o.Package == "" {
		o.Package = p.Name
	}
	if o.Machine == elf.EM_NONE {
		o.Machine = hostMachine
	}
	obj, err := Build(p, o.Machine)
	if err != nil {
		return nil, err
	}
	src, err := GenerateGo(p, o.Package)
	if err != nil {
		return nil, fmt.Errorf("generate Go: %w", err)
	}
	return []GeneratedFile{
		{SOName(p.Name), obj.Bytes},
		{p.Name + ".h", GenerateHeader(p)},
		{p.Name + ".go", src},
	}, nil
}
