//go:build cgo

package main

/*
#include <stdlib.h>
#include "bridge.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/usdtkit/usdtkit/dynsdt"
)

// SDTError_t codes (libstapsdt.h) that the Go side returns.
const (
	noError          = -1
	elfCreationError = 0
	tmpCreationError = 1
)

// maxArgs is MAX_ARGUMENTS_EXTENDED, the stride of usdtkit_load.types.
const maxArgs = 12

// argTypes maps libstapsdt's ArgType_t values (the size in bytes, negative
// for signed types) plus 8 to dynsdt's; ArgInvalid where no ArgType_t is.
// Strings and pointers are uint64 there.
var argTypes = [17]dynsdt.ArgType{
	8 + 1: dynsdt.Uint8, 8 - 1: dynsdt.Int8,
	8 + 2: dynsdt.Uint16, 8 - 2: dynsdt.Int16,
	8 + 4: dynsdt.Uint32, 8 - 4: dynsdt.Int32,
	8 + 8: dynsdt.Uint64, 8 - 8: dynsdt.Int64,
}

// argType returns dynsdt's type for the ArgType_t value t.
func argType(t C.int) (dynsdt.ArgType, bool) {
	if t < -8 || t > 8 || argTypes[t+8] == dynsdt.ArgInvalid {
		return dynsdt.ArgInvalid, false
	}
	return argTypes[t+8], true
}

// session is what one C provider loaded: the object now loaded, and those
// loaded before and unloaded since, which must stay mapped (as retired
// copies of their stubs) until providerDestroy, because a probeFire
// racing with providerUnload may still call into them.
type session struct {
	mu      sync.Mutex
	live    *dynsdt.Provider
	retired []*dynsdt.Provider
}

// cError stores msg as a malloc'd C string for the C side to own.
func cError(errmsg **C.char, err error) {
	*errmsg = C.CString(err.Error())
}

// usdtkit_stapsdt_load builds and maps the object for req's probes (see
// bridge.h) and returns an SDTError_t, noError on success; on failure
// *errmsg is set.
//
//export usdtkit_stapsdt_load
func usdtkit_stapsdt_load(req *C.struct_usdtkit_load, errmsg **C.char) C.int {
	n := int(req.nprobes)
	if n < 0 {
		cError(errmsg, fmt.Errorf("provider %s: %d probes", C.GoString(req.provider), n))
		return elfCreationError
	}
	names := unsafe.Slice(req.names, n)
	argc := unsafe.Slice(req.argc, n)
	types := unsafe.Slice(req.types, n*maxArgs)
	spec := &dynsdt.ProviderSpec{Name: C.GoString(req.provider), Probes: make([]dynsdt.ProbeSpec, n)}
	// One allocation for every probe's argument types.
	total := 0
	for _, c := range argc {
		if c > 0 && c <= maxArgs {
			total += int(c)
		}
	}
	all := make([]dynsdt.ArgType, total)
	for i := range n {
		ps := &spec.Probes[i]
		ps.Name = C.GoString(names[i])
		if argc[i] < 0 || argc[i] > maxArgs {
			cError(errmsg, fmt.Errorf("provider %s: probe %s: %d arguments", spec.Name, ps.Name, argc[i]))
			return elfCreationError
		}
		ps.Args, all = all[:argc[i]:argc[i]], all[argc[i]:]
		for j := range ps.Args {
			t, ok := argType(types[i*maxArgs+j])
			if !ok {
				cError(errmsg, fmt.Errorf("provider %s: probe %s: argument %d has type %d", spec.Name, ps.Name, j, types[i*maxArgs+j]))
				return elfCreationError
			}
			ps.Args[j] = t
		}
	}
	var s *session
	if req.session == 0 {
		s = &session{}
		req.session = C.uintptr_t(cgo.NewHandle(s))
	} else {
		s = cgo.Handle(req.session).Value().(*session)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live != nil {
		cError(errmsg, fmt.Errorf("provider %s is loaded", spec.Name))
		return tmpCreationError
	}
	p, err := dynsdt.Load(spec, &dynsdt.Options{Memfd: req.memfd != 0})
	if err != nil {
		cError(errmsg, err)
		if errors.Is(err, dynsdt.ErrSpec) {
			return elfCreationError
		}
		return tmpCreationError
	}
	s.live = p
	stubs := unsafe.Slice(req.stubs, n)
	origs := unsafe.Slice(req.origs, n)
	for i, ps := range spec.Probes {
		stub, orig, _ := p.Probe(ps.Name).Addresses()
		stubs[i], origs[i] = C.uintptr_t(stub), C.uint32_t(orig)
	}
	req.path = C.CString(p.Path())
	return noError
}

// usdtkit_stapsdt_unload closes the loaded object of session, keeping its
// range mapped; it returns an SDTError_t and sets *errmsg on failure.
//
//export usdtkit_stapsdt_unload
func usdtkit_stapsdt_unload(h C.uintptr_t, errmsg **C.char) C.int {
	const sharedLibraryCloseError = 4
	s := cgo.Handle(h).Value().(*session)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live == nil {
		return noError
	}
	p := s.live
	s.live = nil
	s.retired = append(s.retired, p)
	if err := p.Close(); err != nil {
		cError(errmsg, err)
		return sharedLibraryCloseError
	}
	return noError
}

// usdtkit_stapsdt_destroy ends session: its objects become unreachable and
// are unmapped by dynsdt's cleanup once the garbage collector finds them.
// The C side has freed or is freeing every probe, so nothing calls into
// them any more.
//
//export usdtkit_stapsdt_destroy
func usdtkit_stapsdt_destroy(h C.uintptr_t) {
	s := cgo.Handle(h).Value().(*session)
	s.mu.Lock()
	if s.live != nil {
		s.live.Close()
		s.live = nil
	}
	s.retired = nil
	s.mu.Unlock()
	cgo.Handle(h).Delete()
}
