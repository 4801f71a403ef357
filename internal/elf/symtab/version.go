package symtab

import (
	"debug/elf"
	"encoding/binary"
	"io"

	"github.com/usdtkit/usdtkit/elfnotes"
)

// GNU symbol versioning (.gnu.version, .gnu.version_d, .gnu.version_r), as
// specified by the LSB Core "Symbol Versioning" chapter and implemented by
// glibc's dl-version.c. The records have the same layout in ELF32 and ELF64.
const (
	verdefSize  = 20 // Elf_Verdef {version, flags, ndx, cnt u16; hash, aux, next u32}
	verdauxSize = 8  // Elf_Verdaux {name, next u32}
	verneedSize = 16 // Elf_Verneed {version, cnt u16; file, aux, next u32}
	vernauxSize = 16 // Elf_Vernaux {hash u32; flags, other u16; name, next u32}

	verFlagBase   = 0x1    // VER_FLG_BASE: the verdef naming the file itself
	versymVersion = 0x7fff // index into the version definitions/needs
	versymHidden  = 0x8000 // VERSYM_HIDDEN: a non-default version
	verNdxGlobal  = 1      // VER_NDX_GLOBAL: unversioned
)

// versions maps each .dynsym index to its GNU version name.
type versions struct {
	versym []byte // .gnu.version: one uint16 per .dynsym entry
	off    uint64 // file offset of versym
	order  binary.ByteOrder
	names  map[uint16]string
	// damaged reports that a version section could not be read (a
	// warning says why): symbols whose version is unknown or past the
	// end of versym are then listed without one rather than skipped.
	damaged bool
}

// version returns the version name of .dynsym entry i, "" when it has none,
// and whether it is hidden (VERSYM_HIDDEN: "foo@V", not the default
// "foo@@V").
func (v *versions) version(i int) (name string, hidden bool, err error) {
	if v == nil || v.versym == nil {
		return "", false, nil
	}
	if i < 0 || 2*i+2 > len(v.versym) {
		return "", false, nil // damaged: versions() warned
	}
	raw := v.order.Uint16(v.versym[2*i:])
	ndx := raw & versymVersion
	if ndx <= verNdxGlobal {
		return "", false, nil
	}
	name, ok := v.names[ndx]
	if !ok && v.damaged {
		return "", false, nil
	}
	if !ok {
		return "", false, newFormatError(v.off+uint64(2*i), "undefined symbol version index", ndx)
	}
	return name, raw&versymHidden != 0, nil
}

// parseVerdef adds the version names defined in a .gnu.version_d section
// (data, at file offset off) to names. The base definition, which names the
// file itself, is skipped.
func parseVerdef(names map[uint16]string, data []byte, off uint64, strtab *strTab, order binary.ByteOrder) error {
	// Each record's vd_next is relative and must be positive, so the walk
	// moves forward and ends within len(data) steps.
	for pos := uint64(0); ; {
		if pos+verdefSize > uint64(len(data)) {
			return newFormatError(off+pos, "version definition out of range", nil)
		}
		d := data[pos:]
		flags := order.Uint16(d[2:4])
		ndx := order.Uint16(d[4:6])
		cnt := order.Uint16(d[6:8])
		aux := uint64(order.Uint32(d[12:16]))
		next := uint64(order.Uint32(d[16:20]))
		if flags&verFlagBase == 0 && cnt > 0 {
			// The first Elf_Verdaux names the version; any others name
			// its parents, which do not change a symbol's version.
			a := pos + aux
			if a+verdauxSize > uint64(len(data)) {
				return newFormatError(off+pos, "version definition aux out of range", aux)
			}
			nameOff := order.Uint32(data[a:])
			name, msg, err := strtab.cstring(nameOff)
			if err != nil {
				return err
			}
			if msg != "" {
				return newFormatError(off+a, "version name "+msg, nameOff)
			}
			names[ndx&versymVersion] = name
		}
		if next == 0 {
			return nil
		}
		pos += next
	}
}

// parseVerneed adds the version names required from other files, listed in
// a .gnu.version_r section (data, at file offset off), to names. Defined
// symbols seldom refer to them, but a linker may do so for copy relocations.
func parseVerneed(names map[uint16]string, data []byte, off uint64, strtab *strTab, order binary.ByteOrder) error {
	// Records and their aux chains may overlap in a hostile file; a budget
	// of as many aux entries as fit in the section keeps the walk linear.
	budget := len(data) / vernauxSize
	for pos := uint64(0); ; {
		if pos+verneedSize > uint64(len(data)) {
			return newFormatError(off+pos, "version requirement out of range", nil)
		}
		n := data[pos:]
		cnt := order.Uint16(n[2:4])
		aux := uint64(order.Uint32(n[8:12]))
		next := uint64(order.Uint32(n[12:16]))
		a := pos + aux
		for range cnt {
			if budget--; budget < 0 {
				return newFormatError(off+pos, "too many version requirements for the section size", nil)
			}
			if a+vernauxSize > uint64(len(data)) {
				return newFormatError(off+pos, "version requirement aux out of range", a-pos)
			}
			x := data[a:]
			ndx := order.Uint16(x[6:8])
			nameOff := order.Uint32(x[8:12])
			name, msg, err := strtab.cstring(nameOff)
			if err != nil {
				return err
			}
			if msg != "" {
				return newFormatError(off+a, "version name "+msg, nameOff)
			}
			names[ndx&versymVersion] = name
			anext := uint64(order.Uint32(x[12:16]))
			if anext == 0 {
				break
			}
			a += anext
		}
		if next == 0 {
			return nil
		}
		pos += next
	}
}

// versions reads the GNU version sections that belong to the .dynsym
// section dyn, of n entries. It returns nil when there are none. Sections
// are matched by type and sh_link, as the dynamic linker matches them by
// DT_VERSYM & co. Damaged sections add a warning to r and mark the result
// damaged; the error is an I/O error.
func (r *tableReader) versions(dyn *elfnotes.Section, n int) (*versions, error) {
	f := r.f
	var versym *elfnotes.Section
	for i, s := range f.Sections {
		if s.Type == elf.SHT_GNU_VERSYM && int(s.Link) < len(f.Sections) && f.Sections[s.Link] == dyn {
			versym = f.Sections[i]
			break
		}
	}
	if versym == nil {
		return nil, nil
	}
	v := &versions{off: versym.Offset, order: f.ByteOrder, names: make(map[uint16]string)}
	// Only the entries of the symbols read are needed.
	data := make([]byte, min(versym.Size, 2*uint64(n)))
	_, err := io.ReadFull(versym.Open(), data)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = newFormatError(versym.Offset, "symbol version table truncated", nil)
	}
	if versym.Type == elf.SHT_NOBITS {
		data, err = nil, nil
	}
	if err != nil {
		data = nil
	}
	if err := r.warn(versym, err); err != nil {
		return nil, err
	}
	v.versym = data
	if data == nil {
		v.damaged = true
	} else if len(data) < 2*n {
		r.warnings = append(r.warnings, newFormatError(versym.Offset, versym.Name+": symbol version table shorter than .dynsym", len(data)))
		v.damaged = true
	}
	for _, s := range f.Sections {
		var parse func(map[uint16]string, []byte, uint64, *strTab, binary.ByteOrder) error
		switch s.Type {
		case elf.SHT_GNU_VERDEF:
			parse = parseVerdef
		case elf.SHT_GNU_VERNEED:
			parse = parseVerneed
		default:
			continue
		}
		if s.Size == 0 {
			continue
		}
		strtab, err := r.strtab(s)
		var b []byte
		if err == nil && s.Size > maxVersionSection {
			err = newFormatError(s.Offset, "version section larger than the limit", s.Size)
		}
		if err == nil {
			b, err = s.Data()
		}
		if err == nil {
			err = parse(v.names, b, s.Offset, strtab, f.ByteOrder)
		}
		before := len(r.warnings)
		if err := r.warn(s, err); err != nil {
			return nil, err
		}
		v.damaged = v.damaged || len(r.warnings) > before
	}
	return v, nil
}
