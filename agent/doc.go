// Package agent runs programs of package trace for a long time in every
// process that targets select, follows processes as they start, load
// objects and exit, and exports the programs' maps as Prometheus metrics.
//
// # Model
//
//	Config ──New──► *Agent ──Run──► scan /proc every ScanInterval, and each process at its exec
//	   per program, per selected process: Compile(PID) → Start(PID) → Run
//	   Collect (a prometheus.Collector): live maps + folded maps of exited processes → series
//
// Each program is compiled and started once per process its targets
// select (Target: executable file, comm, mapped object, dynsdt provider,
// cgroup, PID namespace),
// with trace.Options.PID: its links are that process's only, and end
// when it exits. Every scan reads each selected process's executable
// objects (device and inode): a process that mapped or unmapped one since
// it was attached (dlopen, a dynsdt provider in a memfd or a private
// file) is compiled against again and, if that gives it more or fewer
// sites, attached again (the new tracer starts before the old one ends,
// so a hit in between may count twice; none is missed). A process
// against which the program does not compile (no probe matches yet) is
// tried again when its objects change. Run also subscribes to the
// kernel's exec events (the proc connector) and looks at each process
// that execs at once; the delay from a process's exec to its first counted event is
// then the time to compile and attach, and without the events (or for a
// dlopen) at most ScanInterval more.
//
// A program whose targets include a binary runs file-wide on that file,
// without a PID: its uprobes are in every process that maps the file
// from its exec on, so a process that fires at once and exits is counted
// whole. The agent started once per file, not per process, needs no
// scan to see a process (the scans only count the processes covered)
// and its maps are one more contributor at each collection. Such a
// process gets no tracer of its own, and the program is traced
// file-wide only if it means the executable alone and stays bounded
// there: every probe a usdt probe, uprobe or uretprobe with an empty
// path (which then means the executable only: probes in the libraries
// it loads need another target, object say), no map keyed by pid or tid,
// no stack or user symbol read. A program that compiles against the
// file with an error (a probe is in a library) is traced per process,
// as for the other targets and for a binary selected by a path inside a
// container's root. Those processes are attached after their exec: what
// they fire before is not counted, and
// usdtkit_agent_late_attaches_total{program} counts them.
//
// New and Reload compile each program against each of its binary
// targets that exists (else against no object): an error in the text
// (a misspelt function, an argument the probe does not have) is a
// *ConfigError, and Reload keeps the running config and its values; a
// binary that does not exist is a warning (Options.Warn). An error
// attaching at run time counts in usdtkit_agent_attach_errors_total and
// is warned once per program and cause.
//
// When a process exits (or its tracer ends), the final values of its maps
// are folded into the program's: counts, sums, avg/stats, hist and lhist
// are added, min and max combined; an assigned value (@x = v) leaves with
// its process. Memory is bounded by the series limits: a map keeps at most
// its limit of keys. A key a live process holds keeps its place; a key
// that only processes gone held (its folded value) keeps its place until
// a newer key needs it, the key held longest ago giving way first; a key
// deleted by its program, or an assigned value of a process gone, leaves
// nothing to keep and frees its place at the next collection. A key that
// finds no place is dropped, and reported without being remembered (see
// Metrics). So a map keyed by PID exports the live processes' keys and
// then the most recent of the exited ones, however many processes come
// and go.
//
// # Metrics
//
// A map @NAME of program PROG is the metric usdtkit_PROG_NAME (or
// MapConfig.Metric), its key fields labels (MapConfig.Labels, else key0,
// key1…), plus the program's ConstLabels. A string key is its label's
// value as usdtkit list prints names (internal/escape): bytes that are
// not printable UTF-8 as \xNN, a backslash as \\; no key is dropped for
// its bytes. By kind:
//
//   - count() and sum() of unsigned values: counters (usdtkit_PROG_NAME_total).
//     A program that clears or deletes keys makes them go down, which
//     Prometheus reads as a counter reset.
//   - sum() of signed values, min(), max() and assigned integers: gauges.
//   - avg() and stats(): summaries without quantiles: _count and _sum
//     are the number and the sum of the values (the average is
//     _sum/_count).
//   - hist() and lhist(): histograms with classic buckets. The values
//     are integers, so a bucket [lo, hi) is le="hi-1": hist's bounds are
//     -1, 0, 1, 3, 7, … 2^k-1; lhist's min-1, min+step-1, …, then +Inf.
//     Buckets are sent up to the last non-empty one. The maps keep
//     counts, not the values' sum: _sum is NaN (not estimated). Add an
//     avg() or sum() of the same value for it. With native_histograms
//     (MapConfig, ProgramConfig) a hist() map is a native histogram too
//     (schema 0, hist's bucket [2^k, 2^(k+1)) as native bucket k+1,
//     (2^k, 2^(k+1)]), sent with the classic buckets to a scraper that
//     asks for protobuf.
//   - string values: not exported.
//
// The agent's own metrics: usdtkit_agent_attaches_total,
// _detaches_total, _attach_errors_total, _processes{program},
// _attached_sites{program} (uprobes held: drops when processes exit),
// _late_attaches_total{program}, _refused_processes_total{program}
// (processes past ProgramConfig.MaxProcesses, left untraced),
// _probes{program}, _lost_events_total, _map_update_failures_total,
// _dropped_series{program,map}, _dropped_exited_keys_total{program,map},
// _evicted_series_total{program,map},
// _scans_total, _scan_duration_seconds and _collect_duration_seconds.
//
// The two dropped metrics say exactly what a series limit costs, and
// the agent remembers no refused key for them:
//
//   - _dropped_series (a gauge) is the number of distinct keys that the
//     map holds in the live processes, read at this collection, and that
//     are not exported; a key held by several processes counts once, a
//     key no live process holds any more not at all.
//   - _dropped_exited_keys_total (a counter) counts, when a process
//     exits, the keys of its final map that are not exported: their
//     values are discarded. A key counts once per process that held it.
//     Maps of assigned integers count nothing (their values leave with
//     the process anyway).
//   - _evicted_series_total (a counter) counts the keys whose folded
//     values were discarded to give their place to a newer key.
//
// With Config.OTLP, Serve also pushes the same metrics to an
// OpenTelemetry collector over OTLP/HTTP (PushOTLP), translated by
// OpenTelemetry's Prometheus bridge.
//
// # Lifetime and concurrency
//
// Run owns the tracers: it detaches all of them before it returns. Run,
// Reload and Collect are safe for concurrent use. Collect reads the
// tracers' maps without the lock that attaching and scanning take: a
// scrape of many keys does not hold up a new process's attach. Reload drops the
// values and starts over (counters reset), unless it refuses the config.
//
// # Serving
//
// Serve bounds what the clients of /metrics can take (Options.HTTP:
// connections, timeouts, scrapes gathered at once) and applies
// Options.WebConfigFile (TLS, basic auth); Listen opens a TCP address or
// a Unix socket ("unix:PATH"). New refuses to run without root
// (ErrNotRoot).
//
// # Config
//
// The config is JSON (ParseConfig, LoadConfig), documented at Config;
// the CLI (usdtkit agent --config FILE) reloads it on SIGHUP and serves
// /metrics. deploy/ holds a systemd unit and a Kubernetes DaemonSet.
package agent
