package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/usdtkit/usdtkit/agent"
	"github.com/usdtkit/usdtkit/trace"
)

func TestParseConfig(t *testing.T) {
	data, err := os.ReadFile("testdata/config/full.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Programs[0]
	if time.Duration(c.ScanInterval) != 250*time.Millisecond || c.Listen != "127.0.0.1:9435" ||
		p.Name != "web" || len(p.Targets) != 4 || p.Targets[3].Provider != "app" ||
		p.Maps["@requests"].Labels[0] != "path" || !p.Maps["@size"].Skip || p.SeriesLimit != 1000 ||
		c.OTLP == nil || c.OTLP.Endpoint != "http://127.0.0.1:4318" || time.Duration(c.OTLP.Interval) != 10*time.Second {
		t.Errorf("have %+v", c)
	}
	if q := c.Programs[1]; len(c.Programs) != 2 || q.Targets[0].PIDNamespace != 4026532281 || q.Targets[1].PIDNamespaceOf != 4242 ||
		!q.NativeHistograms || !q.Maps["@lat"].NativeHistograms {
		t.Errorf("have %+v", c.Programs)
	}
}

func TestLoadConfigFile(t *testing.T) {
	c, err := agent.LoadConfig("testdata/config/file.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/config/prog.bt")
	if err != nil {
		t.Fatal(err)
	}
	if have := c.Programs[0]; have.Source != string(want) || have.File != "" {
		t.Errorf("have source %q file %q, want source %q", have.Source, have.File, want)
	}
	if _, err := agent.LoadConfig(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: have %v, want ErrNotExist", err)
	}
	// A program file that is /dev/zero is refused, not read for ever.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zero.json")
	if err := os.WriteFile(cfg, []byte(`{"programs": [{"name": "z", "file": "/dev/zero", "targets": [{"comm": "c"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.LoadConfig(cfg); !errors.Is(err, trace.ErrProgramFile) {
		t.Errorf("/dev/zero as a program: have %v, want ErrProgramFile", err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, data string
		field      string
		offset     int64
	}{
		{"syntax", `{"programs": [}`, "", 15},
		{"unknown field", `{"programs": [], "colour": 1}`, "", 29},
		{"type", `{"programs": 3}`, "programs", 14},
		{"trailing", `{"programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}]}]} {}`, "", 74},
		{"no program", `{"programs": []}`, "programs", -1},
		{"bad name", `{"programs": [{"name": "a-b", "source": "x", "targets": [{"comm": "c"}]}]}`, "programs[0].name", -1},
		{"twice", `{"programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}]}, {"name": "a", "source": "x", "targets": [{"comm": "c"}]}]}`, "programs[1].name", -1},
		{"source and file", `{"programs": [{"name": "a", "source": "x", "file": "f", "targets": [{"comm": "c"}]}]}`, "programs[0]", -1},
		{"no target", `{"programs": [{"name": "a", "source": "x"}]}`, "programs[0].targets", -1},
		{"two selectors", `{"programs": [{"name": "a", "source": "x", "targets": [{"comm": "c", "binary": "/b"}]}]}`, "programs[0].targets[0]", -1},
		{"namespace and cgroup", `{"programs": [{"name": "a", "source": "x", "targets": [{"cgroup": "/c", "pid_namespace": 4026531836}]}]}`, "programs[0].targets[0]", -1},
		{"negative namespace pid", `{"programs": [{"name": "a", "source": "x", "targets": [{"pid_namespace_of": -1}]}]}`, "programs[0].targets[0].pid_namespace_of", -1},
		{"label", `{"programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}], "maps": {"@": {"labels": ["1x"]}}}]}`, `programs[0].maps["@"].labels`, -1},
		{"negative limit", `{"programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}], "series_limit": -1}]}`, "programs[0].series_limit", -1},
		{"duration", `{"scan_interval": "soon", "programs": []}`, "", 41},
		{"otlp endpoint", `{"otlp": {"endpoint": "host:4318"}, "programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}]}]}`, "otlp.endpoint", -1},
		{"cpid", `{"programs": [{"name": "a", "source": "usdt::p:n /pid == cpid/ { @ = count(); }", "targets": [{"comm": "c"}]}]}`, "programs[0].source", -1},
		{"signal", `{"programs": [{"name": "a", "source": "usdt::p:n { signal(\"SIGUSR1\"); }", "targets": [{"comm": "c"}]}]}`, "programs[0].source", -1},
		{"positional parameter", `{"programs": [{"name": "a", "source": "usdt::p:n { @[str($1)] = count(); }", "targets": [{"comm": "c"}]}]}`, "programs[0].source", -1},
		{"negative interval", `{"scan_interval": "-1s", "programs": [{"name": "a", "source": "x", "targets": [{"comm": "c"}]}]}`, "scan_interval", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := agent.ParseConfig([]byte(tt.data))
			var ce *agent.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("have %v, %v; want a *ConfigError", c, err)
			}
			if c != nil {
				t.Errorf("have config %+v with the error", c)
			}
			if ce.Field != tt.field || (tt.field == "" && ce.Offset != tt.offset) {
				t.Errorf("have field %q offset %d (%v), want field %q offset %d", ce.Field, ce.Offset, ce, tt.field, tt.offset)
			}
		})
	}
}

// FuzzParseConfig: no panic, and an error exactly when no config.
func FuzzParseConfig(f *testing.F) {
	seeds, err := filepath.Glob("testdata/config/*.json")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := agent.ParseConfig(data)
		if (err == nil) == (c == nil) {
			t.Fatalf("config %v with error %v", c, err)
		}
	})
}
