package agent_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// promServer is Debian's prometheus, run by a test on loopback.
type promServer struct {
	addr string
}

// startPrometheus runs prometheus scraping the agent at target every
// second, until the test ends, and waits until it is ready; flags are
// added to its command line.
func startPrometheus(t testing.TB, target string, flags ...string) *promServer {
	t.Helper()
	bin := testutil.RequireTool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: agent\n    static_configs:\n      - targets: [%q]\n", target)
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Args = append(cmd.Args, flags...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	p := &promServer{addr: addr}
	waitFor(t, "prometheus ready", 60*time.Second, func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// query runs an instant query that must give one sample, and returns its
// value.
func (p *promServer) query(q string) (float64, error) {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", q, r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("query %s: %d samples", q, len(r.Data.Result))
	}
	s, ok := r.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("query %s: value %v", q, r.Data.Result[0].Value[1])
	}
	return strconv.ParseFloat(s, 64)
}
