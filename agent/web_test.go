package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// writeWebConfig writes a self-signed certificate for 127.0.0.1 and a
// web config with TLS and user "prom" of password pass, and returns the
// config's path and the certificate's pool.
func writeWebConfig(t *testing.T, pass string) (string, *x509.CertPool) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("cert.pem", cert)
	write("key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prom: " + string(hash) + "\n"
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	return write("web.yml", []byte(cfg)), pool
}

// serveWebTest serves a small /metrics on ln with the web config at
// path until t ends.
func serveWebTest(t *testing.T, ln net.Listener, path string) {
	l := HTTPLimits{}.withDefaults()
	srv, lim := newServer(metricsHandler(newBulkCollector(3, 3), l), ln, l)
	done := make(chan error, 1)
	go func() { done <- serveWeb(srv, lim, path, func(err error) { t.Log(err) }) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
}

// TestServeWebConfig: with a web config, /metrics is served over TLS
// to the user it names only.
func TestServeWebConfig(t *testing.T) {
	path, pool := writeWebConfig(t, "secret")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serveWebTest(t, ln, path)
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	tests := []struct {
		name       string
		scheme     string
		user, pass string
		want       int
	}{
		{"no user", "https", "", "", http.StatusUnauthorized},
		{"wrong password", "https", "prom", "guess", http.StatusUnauthorized},
		{"unknown user", "https", "root", "secret", http.StatusUnauthorized},
		{"user", "https", "prom", "secret", http.StatusOK},
		{"plain http", "http", "prom", "secret", http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", tt.scheme+"://"+addr+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.user != "" {
				req.SetBasicAuth(tt.user, tt.pass)
			}
			resp, err := tlsClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tt.want {
				t.Errorf("have status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestListenUnix: "unix:PATH" is a socket of mode 0660 that serves
// /metrics, replacing a stale socket file and removed on close.
func TestListenUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.sock")
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	ln, err := Listen("unix:" + path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if have := fi.Mode().Perm(); have != 0o660 {
		t.Errorf("have socket mode %#o, want 0660", have)
	}
	serveWebTest(t, ln, "")
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}}}
	resp, err := c.Get("http://agent/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("have status %d over the Unix socket, want 200", resp.StatusCode)
	}
}
