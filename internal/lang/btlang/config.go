package btlang

import (
	"strconv"
	"strings"
)

// configOptions are bpftrace's config options (0.26) by their short,
// lower-case name; true marks those usdtkit applies.
var configOptions = map[string]bool{
	"max_strlen": true, "print_maps_on_exit": true, "stack_mode": true,
	"cat_bytes_max": true, "max_cat_bytes": true, "on_stack_limit": true, "show_debug_info": true,

	"cache_user_symbols": false, "cpp_demangle": false, "lazy_symbolication": false,
	"log_size": false, "max_bpf_progs": false, "max_map_keys": false, "max_probes": false,
	"max_type_res_iterations": false, "missing_probes": false, "perf_rb_pages": false,
	"str_trunc_trailer": false, "symbol_source": false, "license": false,
	"use_blazesym": false, "max_ast_nodes": false, "print_maps": false,
	"unstable_macro": false, "unstable_map_decl": false, "unstable_import": false,
	"unstable_tseries": false, "unstable_addr": false, "unstable_dw_ustack": false,
}

// configName returns the short, lower-case name of a config option, as
// bpftrace finds it: case does not matter, and a BPFTRACE_ prefix (the
// environment variable's name) may be written.
func configName(name string) string {
	n := strings.ToLower(name)
	return strings.TrimPrefix(n, "bpftrace_")
}

// config checks the program's config block and fills in prog.Settings;
// opts' values (the environment's and the command line's) win over it.
// It returns the errors of the block, nil if none.
func (c *checker) config(prog *Program, opts *CheckOptions) error {
	prog.Settings = Settings{}
	var errs ErrorList
	fail := func(at Pos, format string, args ...any) { errs = append(errs, errorf(at, format, args...)) }
	for _, e := range prog.Config {
		name := configName(e.Name)
		applied, known := configOptions[name]
		if !known {
			fail(e.At, "%s is not a known config option", e.Name)
			continue
		}
		if !applied {
			fail(e.At, "the config option %s is not supported by usdtkit", e.Name)
			continue
		}
		num := func(min, max int) int {
			n, err := strconv.Atoi(e.Value)
			if err != nil || n < min || n > max {
				fail(e.At, "%s must be a number from %d to %d, not %s", e.Name, min, max, e.Value)
				return 0
			}
			return n
		}
		switch name {
		case "max_strlen":
			prog.Settings.StrLen = num(1, 1024)
		case "cat_bytes_max", "max_cat_bytes":
			prog.Settings.CatBytesMax = num(1, 1<<30)
		case "on_stack_limit":
			// Where bpftrace keeps values (its stack or scratch
			// memory): usdtkit chooses by itself, and the output is
			// the same.
			num(0, 1<<20)
		case "print_maps_on_exit":
			if on, ok := configBool(e.Value); !ok {
				fail(e.At, "%s must be true or false (1 or 0), not %s", e.Name, e.Value)
			} else {
				prog.Settings.NoExitMaps = !on
			}
		case "show_debug_info":
			// bpftrace 0.24's FILE:LINE after each stack frame, which
			// usdtkit does not print: off is what usdtkit does.
			if on, ok := configBool(e.Value); !ok {
				fail(e.At, "%s must be true or false (1 or 0), not %s", e.Name, e.Value)
			} else if on {
				fail(e.At, "%s = %s is not supported: usdtkit prints no file and line in stacks (they are in -o json)", e.Name, e.Value)
			}
		case "stack_mode":
			switch e.Value {
			case "bpftrace":
			case "perf":
				prog.Settings.StackPerf = true
			case "raw":
				fail(e.At, "stack_mode raw is not supported yet; use perf for addresses")
			default:
				fail(e.At, "%s must be bpftrace, perf or raw, not %s", e.Name, e.Value)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if opts == nil || opts.StrLen == 0 {
		if n := prog.Settings.StrLen; n != 0 {
			c.strLen = n
		}
	}
	c.stackPerf = prog.Settings.StackPerf
	return nil
}

// configBool reads a config option's boolean value as bpftrace does.
func configBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "true", "1":
		return true, true
	case "false", "0":
		return false, true
	}
	return false, false
}
