// Package agent runs programs of package trace for a long time in every
// process their targets select, and exports the programs' maps as
// Prometheus metrics.
//
//	Config ──New──► *Agent ──Run──► follow processes: compile, start, run per process
//	                       ──Collect──► live maps + folded maps of exited processes
//
// Entry points:
//   - ParseConfig and LoadConfig read the JSON config; New checks it.
//   - Run follows processes as they start, map objects and exit.
//   - Serve serves /metrics; Listen opens a TCP address or "unix:PATH".
//   - Reload swaps the config.
//
// Rules for callers:
//   - New refuses to run without root (ErrNotRoot).
//   - An error in a program's text is a *ConfigError. Reload then keeps
//     the running config. A config it accepts starts over from zero.
//   - A map @NAME of program PROG is the metric usdtkit_PROG_NAME. Each
//     map exports at most its series limit of keys.
//   - Run detaches every tracer before it returns. Run, Reload and
//     Collect are safe for concurrent use.
//
// docs/agent.md describes targets, file-wide tracing, the metrics by map
// kind, series limits and the agent's own metrics.
package agent
