// Package probes declares the USDT probes of the go-server example,
// provider "server": request__start(path, id) and request__done(path, id,
// status, nanos).
//
// server.go is generated from ../server.d by usdtkit gen (go generate in
// the parent directory); edit server.d, not server.go. The generated Load
// builds the provider's shared object at run time with package dynsdt, so
// the program needs no file besides its own binary; the server.so and
// server.h that usdtkit gen also writes here are for other languages and
// are not committed.
package probes
