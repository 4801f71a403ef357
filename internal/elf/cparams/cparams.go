package cparams

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"io"
)

// Read returns, for each function the DWARF of the ELF file r describes
// (the first description of a name wins, as bpftrace's), its parameters
// as "TYPE NAME".
func Read(r io.ReaderAt) (params map[string][]string, err error) {
	defer func() {
		if p := recover(); p != nil {
			params, err = nil, fmt.Errorf("read DWARF: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	if f.Section(".debug_info") == nil {
		return nil, nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("read DWARF: %w", err)
	}
	return readParams(d)
}

func readParams(d *dwarf.Data) (map[string][]string, error) {
	params := map[string][]string{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			return params, nil
		}
		if e.Tag != dwarf.TagSubprogram {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		_, seen := params[name]
		var ps []string
		for e.Children {
			c, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("read DWARF: %w", err)
			}
			if c == nil || c.Tag == 0 {
				break
			}
			if c.Tag == dwarf.TagFormalParameter {
				pname, _ := c.Val(dwarf.AttrName).(string)
				ps = append(ps, typeName(d, c, 0)+" "+pname)
			}
			if c.Children {
				r.SkipChildren()
			}
		}
		if name != "" && !seen {
			params[name] = ps
		}
	}
}

// maxDepth bounds a chain of pointer and const types (a loop in hostile
// DWARF).
const maxDepth = 32

// typeName is the name of the type e's AttrType refers to, as bpftrace
// 0.17 writes it: a base type or typedef by name, "T*", "struct S",
// "const T", "T* const"; other types "<unknown type>".
func typeName(d *dwarf.Data, e *dwarf.Entry, depth int) string {
	off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return "void"
	}
	if depth > maxDepth {
		return "<unknown type>"
	}
	r := d.Reader()
	r.Seek(off)
	t, err := r.Next()
	if err != nil || t == nil {
		return "<unknown type>"
	}
	name, _ := t.Val(dwarf.AttrName).(string)
	switch t.Tag {
	case dwarf.TagBaseType, dwarf.TagTypedef:
		return name
	case dwarf.TagPointerType:
		if _, ok := t.Val(dwarf.AttrType).(dwarf.Offset); !ok {
			return "void*"
		}
		return typeName(d, t, depth+1) + "*"
	case dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagEnumerationType:
		prefix := map[dwarf.Tag]string{dwarf.TagStructType: "struct ", dwarf.TagUnionType: "union ", dwarf.TagEnumerationType: "enum "}[t.Tag]
		if name == "" {
			name = "<anonymous>"
		}
		return prefix + name
	case dwarf.TagConstType:
		inner := typeName(d, t, depth+1)
		if isPointer(d, t) {
			return inner + " const"
		}
		return "const " + inner
	}
	return "<unknown type>"
}

// isPointer reports whether the type e refers to is a pointer.
func isPointer(d *dwarf.Data, e *dwarf.Entry) bool {
	off, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
	if !ok {
		return false
	}
	r := d.Reader()
	r.Seek(off)
	t, err := r.Next()
	return err == nil && t != nil && t.Tag == dwarf.TagPointerType
}
