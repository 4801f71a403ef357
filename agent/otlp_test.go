package agent_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/usdtkit/usdtkit/internal/testutil"
)

// otlpSink is an OTLP/HTTP receiver keeping the last value of each
// monotonic sum it was sent, by metric name.
type otlpSink struct {
	mu   sync.Mutex
	sums map[string]float64
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if err != nil || r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, req) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetSum().GetDataPoints() {
					s.sums[m.GetName()] = dp.GetAsDouble() + float64(dp.GetAsInt())
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Write(b)
}

func (s *otlpSink) get(name string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.sums[name]
	return v, ok
}

// TestAgentOTLP: the agent pushes its maps to an OTLP/HTTP receiver; the
// count a target fired arrives as a monotonic sum.
func TestAgentOTLP(t *testing.T) {
	testutil.RequireBPF(t)
	target := buildTarget(t)
	sink := &otlpSink{sums: map[string]float64{}}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	a := newAgent(t, fmt.Appendf(nil, `{"scan_interval": "50ms",
		"otlp": {"endpoint": %q, "interval": "100ms"},
		"programs": [{"name": "o", "source": "usdt::agentt:hit { @hits = count(); }", "targets": [{"binary": %q}]}]}`,
		srv.URL, target))
	startAgent(t, a)
	c := startChild(t, target, "7", "wait")
	fireWhenAttached(t, a, 1, c)
	waitFor(t, "pushed", 20*time.Second, func() (bool, string) {
		var names []string
		sink.mu.Lock()
		for n := range sink.sums {
			if strings.HasPrefix(n, "usdtkit_o_") {
				names = append(names, n)
			}
		}
		sink.mu.Unlock()
		v, ok := sink.get("usdtkit_o_hits_total")
		return ok && v == 7, fmt.Sprintf("usdtkit_o_hits_total %v (present %v); have %q", v, ok, names)
	})
}
