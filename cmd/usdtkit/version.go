package main

import (
	"runtime/debug"
)

// version says which usdtkit this is: the module version when built with
// go install MODULE@VERSION, else the VCS revision go build stamped (with
// "+modified" for a dirty tree), else "(devel)".
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return "(devel)"
	}
	return rev + modified
}
