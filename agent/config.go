package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/usdtkit/usdtkit/internal/lang/btlang"
	"github.com/usdtkit/usdtkit/trace"
)

// DefaultScanInterval is how often the agent looks for new and exited
// processes when Config.ScanInterval is 0.
const DefaultScanInterval = time.Second

// DefaultSeriesLimit is the most series one map exports when neither
// MapConfig.SeriesLimit nor ProgramConfig.SeriesLimit says.
const DefaultSeriesLimit = 10000

// DefaultMaxProcesses is the most processes one program runs in at once
// when ProgramConfig.MaxProcesses does not say: each has a tracer of its
// own, about a megabyte of memory and a dozen descriptors, so that the
// agent stays within the DaemonSet's 256 MiB whatever a neighbour starts.
const DefaultMaxProcesses = 100

// DefaultListen is the address the CLI serves /metrics on when
// Config.Listen is empty.
const DefaultListen = "127.0.0.1:9435"

// maxConfigSize bounds a config file: it is read whole.
const maxConfigSize = 4 << 20

// Config is the agent's configuration, read from JSON by ParseConfig:
//
//	{
//	  "listen": "127.0.0.1:9435",
//	  "scan_interval": "1s",
//	  "programs": [{
//	    "name": "web",
//	    "source": "usdt::app:request { @requests[str(arg0)] = count(); @size = hist(arg1); }",
//	    "targets": [{"binary": "/usr/bin/app"}, {"comm": "app-worker"}, {"provider": "app"}],
//	    "const_labels": {"service": "app"},
//	    "series_limit": 1000,
//	    "maps": {"@requests": {"metric": "app_requests_total", "labels": ["path"]}}
//	  }]
//	}
type Config struct {
	// Listen is the HTTP address of /metrics (the CLI's; the package
	// serves nothing itself). Empty: DefaultListen.
	Listen string `json:"listen,omitempty"`
	// ScanInterval is how often /proc is scanned for processes to attach
	// to and objects they mapped since; 0: DefaultScanInterval. It bounds
	// the delay from a process's exec (or dlopen) to its first counted
	// event, plus the time to compile and attach, for the processes a
	// program does not trace file-wide (see Target.Binary).
	ScanInterval Duration `json:"scan_interval,omitempty"`
	// Programs run, each in every process its targets select.
	Programs []ProgramConfig `json:"programs"`
	// OTLP, when set, also pushes the metrics to an OpenTelemetry
	// collector over OTLP/HTTP (Serve does; Reload keeps the first
	// config's).
	OTLP *OTLPConfig `json:"otlp,omitempty"`
}

// OTLPConfig says where and how often metrics are pushed over OTLP/HTTP
// (protobuf).
type OTLPConfig struct {
	// Endpoint is the collector's URL: "http://host:4318" (the path
	// /v1/metrics is added unless the URL has one). Required.
	Endpoint string `json:"endpoint"`
	// Interval between pushes; 0: DefaultOTLPInterval.
	Interval Duration `json:"interval,omitempty"`
	// Headers are sent with every push (authentication).
	Headers map[string]string `json:"headers,omitempty"`
}

// DefaultOTLPInterval is how often metrics are pushed over OTLP when
// OTLPConfig.Interval is 0.
const DefaultOTLPInterval = 30 * time.Second

// ProgramConfig is one program and the processes it runs in.
type ProgramConfig struct {
	// Name names the program in metrics: a map's metric is
	// "usdtkit_NAME_MAP" unless its MapConfig says. [a-zA-Z_][a-zA-Z0-9_]*.
	Name string `json:"name"`
	// Source is the program's text, in the language of package trace.
	// Its probes usually have an empty path (usdt::PROVIDER:NAME): they are
	// looked for in every object of each selected process.
	Source string `json:"source,omitempty"`
	// File is a file holding the program instead of Source; a relative
	// path is relative to the config file (LoadConfig).
	File string `json:"file,omitempty"`
	// Targets select processes; a process any of them selects is traced.
	// At least one.
	Targets []Target `json:"targets"`
	// ConstLabels are added to every series of the program's maps.
	ConstLabels map[string]string `json:"const_labels,omitempty"`
	// SeriesLimit is the most series a map of the program exports (see
	// MapConfig.SeriesLimit); 0: DefaultSeriesLimit.
	SeriesLimit int `json:"series_limit,omitempty"`
	// MaxProcesses is the most processes the program runs in at once,
	// each with a tracer of its own; past it a process its targets
	// select is left untraced (until one of the traced ends) and counted
	// in usdtkit_agent_refused_processes_total. The processes of a binary
	// the program runs on file-wide cost nothing each and do not count.
	// 0: DefaultMaxProcesses.
	MaxProcesses int `json:"max_processes,omitempty"`
	// Maps tune the export of maps by name ("@", "@name").
	Maps map[string]MapConfig `json:"maps,omitempty"`
	// NativeHistograms exports every hist() map of the program as a
	// native histogram too (MapConfig.NativeHistograms).
	NativeHistograms bool `json:"native_histograms,omitempty"`
}

// Target selects processes. Exactly one field is set; a program's
// targets add up (a process any of them selects is traced).
type Target struct {
	// Binary selects the processes whose executable is this file (same
	// device and inode as the path names now), on the host or inside the
	// process's own root (a container's path). A program that can (see
	// docs/agent.md) runs file-wide on the host's file: its
	// processes are counted from their exec.
	Binary string `json:"binary,omitempty"`
	// Comm selects the processes whose name (/proc/PID/comm, at most 15
	// bytes) is this.
	Comm string `json:"comm,omitempty"`
	// Object selects the processes that map this file executable, such as
	// a library loaded with dlopen, by the path /proc/PID/maps shows.
	Object string `json:"object,omitempty"`
	// Provider selects the processes that map a dynsdt provider of this
	// name (its memfd "/memfd:NAME.so" or file "NAME-PID-….so"), or
	// another object whose file name is NAME.so.
	Provider string `json:"provider,omitempty"`
	// Cgroup selects the processes in this cgroup or below it: a path
	// such as "/kubepods.slice/kubepods-pod1234.slice" that one line of
	// /proc/PID/cgroup names, or a parent of it.
	Cgroup string `json:"cgroup,omitempty"`
	// PIDNamespace selects the processes in the PID namespace of this
	// inode number: the number /proc/PID/ns/pid links to ("pid:[N]", as
	// lsns lists it). Only that namespace: not the namespaces nested in
	// it.
	PIDNamespace uint64 `json:"pid_namespace,omitempty"`
	// PIDNamespaceOf selects the processes in the PID namespace of the
	// process with this PID (as the agent sees it), read again at every
	// scan: a container's init, say. While no process has that PID it
	// selects none.
	PIDNamespaceOf int `json:"pid_namespace_of,omitempty"`
}

// MapConfig tunes how one map is exported.
type MapConfig struct {
	// Metric is the metric's name; empty: "usdtkit_PROGRAM_MAP" (with
	// "_total" for counters).
	Metric string `json:"metric,omitempty"`
	// Labels name the key's fields, in order; missing names are key0,
	// key1…
	Labels []string `json:"labels,omitempty"`
	// SeriesLimit is the most series (keys) the map exports. A key is
	// kept while a live process holds it; a key only exited processes
	// held (its folded value) is kept until a newer key needs its place,
	// the one held longest ago first (counted in
	// usdtkit_agent_evicted_series_total{program,map}); a key that
	// finds no place is dropped.
	// usdtkit_agent_dropped_series{program,map} is the number of
	// distinct keys the live processes' maps hold at a collection that
	// are not exported; usdtkit_agent_dropped_exited_keys_total counts
	// the keys whose final values were discarded when their process
	// exited, once per process and key. 0: the program's limit.
	SeriesLimit int `json:"series_limit,omitempty"`
	// Skip leaves the map out of the export.
	Skip bool `json:"skip,omitempty"`
	// NativeHistograms exports a hist() map as a Prometheus native
	// histogram (schema 0) as well as with its classic buckets: a scraper
	// that asks for protobuf (Prometheus with native histograms enabled)
	// gets both, the text format the classic buckets only. hist's bucket
	// [2^k, 2^(k+1)) is the native bucket of index k+1, (2^k, 2^(k+1)],
	// one to one: for integer values v, the bucket whose interval holds
	// v+1 (v is in [2^k, 2^(k+1)) exactly when v+1 is in (2^k, 2^(k+1)]).
	// The value 0 is the zero bucket (threshold 0); negative values, which
	// hist keeps in one bucket without their magnitude, are the negative
	// bucket of index 0, [-1, -0.5). lhist() maps keep their classic
	// buckets only: linear buckets do not map onto exponential ones.
	NativeHistograms bool `json:"native_histograms,omitempty"`
}

// Duration is a time.Duration written in JSON as Go writes durations
// ("1s", "250ms").
type Duration time.Duration

// UnmarshalJSON reads a string time.ParseDuration accepts.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"1s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// ConfigError is an error in a config file: at Offset (a byte offset,
// -1 when the error is about a value rather than the text) or in Field
// ("programs[0].targets").
type ConfigError struct {
	Offset int64
	Field  string
	Msg    string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Field != "":
		return fmt.Sprintf("config: %s: %s", e.Field, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("config: at byte %d: %s", e.Offset, e.Msg)
	}
	return "config: " + e.Msg
}

var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParseConfig reads a JSON config and checks it: unknown fields, a
// program without name, source or target, a target with not exactly one
// selector, names Prometheus refuses and negative limits are
// *ConfigErrors. It reads no file: a program's File is read by
// LoadConfig.
func ParseConfig(data []byte) (*Config, error) {
	if len(data) > maxConfigSize {
		return nil, &ConfigError{Offset: -1, Msg: fmt.Sprintf("%d bytes, more than %d", len(data), maxConfigSize)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, jsonError(err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ConfigError{Offset: dec.InputOffset(), Msg: "data after the config object"}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// jsonError turns a decoding error into a ConfigError.
func jsonError(err error, off int64) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &ConfigError{Offset: se.Offset, Msg: se.Error()}
	case errors.As(err, &te):
		return &ConfigError{Offset: te.Offset, Field: te.Field, Msg: fmt.Sprintf("want %s, have %s", te.Type, te.Value)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &ConfigError{Offset: off, Msg: "unexpected end of the config"}
	}
	return &ConfigError{Offset: off, Msg: err.Error()}
}

// check validates c, naming the field.
func (c *Config) check() error {
	if c.ScanInterval < 0 {
		return &ConfigError{Offset: -1, Field: "scan_interval", Msg: "negative"}
	}
	if c.OTLP != nil {
		u, err := url.Parse(c.OTLP.Endpoint)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return &ConfigError{Offset: -1, Field: "otlp.endpoint", Msg: fmt.Sprintf("%q is not an http or https URL", c.OTLP.Endpoint)}
		case c.OTLP.Interval < 0:
			return &ConfigError{Offset: -1, Field: "otlp.interval", Msg: "negative"}
		}
	}
	if len(c.Programs) == 0 {
		return &ConfigError{Offset: -1, Field: "programs", Msg: "no program"}
	}
	names := map[string]bool{}
	for i := range c.Programs {
		p := &c.Programs[i]
		field := fmt.Sprintf("programs[%d]", i)
		bad := func(f, msg string) error { return &ConfigError{Offset: -1, Field: field + f, Msg: msg} }
		switch {
		case !nameRE.MatchString(p.Name):
			return bad(".name", fmt.Sprintf("%q is not a metric name part ([a-zA-Z_][a-zA-Z0-9_]*)", p.Name))
		case names[p.Name]:
			return bad(".name", fmt.Sprintf("%q named twice", p.Name))
		case (p.Source == "") == (p.File == ""):
			return bad("", "want exactly one of source and file")
		case len(p.Targets) == 0:
			return bad(".targets", "no target")
		case p.SeriesLimit < 0:
			return bad(".series_limit", "negative")
		case p.MaxProcesses < 0:
			return bad(".max_processes", "negative")
		}
		names[p.Name] = true
		if why := unsupportedSource(p.Source); why != "" {
			return bad(".source", why)
		}
		for j, t := range p.Targets {
			n := 0
			for _, s := range []string{t.Binary, t.Comm, t.Object, t.Provider, t.Cgroup} {
				if s != "" {
					n++
				}
			}
			if t.PIDNamespace != 0 {
				n++
			}
			if t.PIDNamespaceOf != 0 {
				n++
			}
			if t.PIDNamespaceOf < 0 {
				return bad(fmt.Sprintf(".targets[%d].pid_namespace_of", j), "negative")
			}
			if n != 1 {
				return bad(fmt.Sprintf(".targets[%d]", j), "want exactly one of binary, comm, object, provider, cgroup, pid_namespace and pid_namespace_of")
			}
		}
		for k := range p.ConstLabels {
			if !nameRE.MatchString(k) {
				return bad(".const_labels", fmt.Sprintf("%q is not a label name", k))
			}
		}
		for name, m := range p.Maps {
			f := fmt.Sprintf(".maps[%q]", name)
			if m.Metric != "" && !nameRE.MatchString(m.Metric) {
				return bad(f+".metric", fmt.Sprintf("%q is not a metric name", m.Metric))
			}
			if m.SeriesLimit < 0 {
				return bad(f+".series_limit", "negative")
			}
			for _, l := range m.Labels {
				if !nameRE.MatchString(l) {
					return bad(f+".labels", fmt.Sprintf("%q is not a label name", l))
				}
			}
		}
	}
	return nil
}

// unsupportedSource says what of a program's source the agent refuses:
// what it cannot give a value, cpid (it starts no command) and positional
// parameters (it passes none), and signal(), which only --unsafe allows. A source that does not parse is left to the compile in
// each process, which reports it.
func unsupportedSource(src string) string {
	prog, err := btlang.Parse("source", []byte(src))
	if err != nil {
		return ""
	}
	why := ""
	check := func(n btlang.Node) bool {
		switch n := n.(type) {
		case *btlang.Call:
			if n.Name == "signal" {
				why = fmt.Sprintf("%s: the agent does not run unsafe programs (signal())", n.At)
			}
		case *btlang.Builtin:
			if n.Name == "cpid" {
				why = fmt.Sprintf("%s: cpid is the PID of a command usdtkit starts, and the agent starts none", n.At)
			}
		case *btlang.IntLit:
			if n.Param != "" {
				why = fmt.Sprintf("%s: %s is a positional parameter, and the agent passes none", n.At, n.Param)
			}
		case *btlang.StrLit:
			if n.Param != "" {
				why = fmt.Sprintf("%s: %s is a positional parameter, and the agent passes none", n.At, n.Param)
			}
		}
		return why == ""
	}
	for _, b := range prog.Blocks {
		btlang.Inspect(b, check)
	}
	return why
}

// LoadConfig reads and parses the config file at path, and reads each
// program's File (relative to the config's directory) into its Source.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range c.Programs {
		p := &c.Programs[i]
		if p.File == "" {
			continue
		}
		f := p.File
		if !filepath.IsAbs(f) {
			f = filepath.Join(filepath.Dir(path), f)
		}
		src, err := trace.ReadProgram(f)
		if err != nil {
			return nil, fmt.Errorf("%s: programs[%d].file: %w", path, i, err)
		}
		p.Source, p.File = src, ""
	}
	return c, nil
}
