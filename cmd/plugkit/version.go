package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

func init() {
	commands["version"] = command{
		summary: "print plugkit's module version and the commit it was built from (also: plugkit --version)",
		run:     runVersion,
		plain:   true,
	}
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "plugkit version", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 0 {
		fmt.Fprintf(stderr, "plugkit version takes no arguments\nusage: plugkit version\n")
		return 2
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	fmt.Fprintln(stdout, versionLine(info))
	return 0
}

// versionLine says which plugkit info describes: the module version
// (a release's tag, or a pseudo-version of the commit for a build from a
// checkout), the commit and whether the checkout was modified, and the Go
// release. "(devel)", the version of a build from a checkout without a tag
// or version control information, is explained.
func versionLine(info *debug.BuildInfo) string {
	if info == nil {
		return "plugkit (unknown): this binary carries no build information"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var parts []string
	if rev != "" {
		c := "commit " + rev
		if modified {
			c += " with uncommitted changes"
		}
		if when != "" {
			c += " of " + when
		}
		parts = append(parts, c)
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	line := "plugkit " + version
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	if version == "(devel)" && rev == "" {
		line += ": built from a checkout without version control information; build with -buildvcs=true in a git checkout to record the commit"
	}
	return line
}
