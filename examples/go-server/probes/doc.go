// Package probes declares the go-server example's USDT probes, provider
// "server": request__start(path, id) and request__done(path, id, status,
// nanos).
//
// server.go is generated from ../server.d by usdtkit gen; edit server.d.
// Load builds the provider's object at run time with dynsdt.
package probes
