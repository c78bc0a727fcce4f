package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/plugkit/plugkit/compat"
	"github.com/plugkit/plugkit/handshake"
)

func init() {
	commands["compat"] = command{
		summary: "find the releases of a plugin this host can use, from a release index",
		run:     runCompat,
	}
}

func runCompat(args []string, stdout, stderr io.Writer) int {
	const usage = "plugkit compat --index FILE --plugin NAME (--kind KIND --majors 1,2 | --protocols 5,6) [--current VERSION] [--json]"
	fs := newFlagSet("compat", usage, stderr)
	index := fs.String("index", "", "the release index `file` (JSON)")
	name := fs.String("plugin", "", "the plugin's `name` in the index")
	kind := fs.String("kind", "", "the plugin `kind` the host uses (empty: the plugin protocol)")
	majors := fs.String("majors", "", "the majors of the kind the host speaks, a comma `list`")
	protocols := fs.String("protocols", "", "the plugin protocol majors the host speaks (Terraform style), a comma `list`")
	current := fs.String("current", "", "the plugin `version` installed now, if any")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	list := *majors
	if *kind == "" {
		list = *protocols
	}
	if *index == "" || *name == "" || list == "" {
		fmt.Fprintf(stderr, "plugkit compat: --index, --plugin and --majors (with --kind) or --protocols are required\nusage: %s\n", usage)
		return 2
	}
	vs, err := handshake.ParseVersions(list)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit compat: %v\n", err)
		return 2
	}
	ix, err := compat.LoadIndex(*index)
	if err != nil {
		fmt.Fprintf(stderr, "plugkit compat: %s\n", oneLine(err))
		return 1
	}
	res, err := ix.Resolve(*name, compat.Requirement{Kind: *kind, Majors: vs})
	if err != nil {
		fmt.Fprintf(stderr, "plugkit compat: %s\n", oneLine(err))
		return 1
	}
	currentOK := false
	if *current != "" {
		for _, r := range res.Releases {
			if r.Version == *current && res.Requirement.Compatible(r) {
				currentOK = true
			}
		}
	}
	if *asJSON {
		out := map[string]any{"plugin": *name, "compatible": res.Latest != nil, "current_compatible": currentOK}
		if res.Latest != nil {
			out["latest"], out["earliest"] = res.Latest.Version, res.Earliest.Version
		}
		switch {
		case *current == "":
			out["message"] = res.Advice()
		case !currentOK:
			out["message"] = res.Message(*current)
		}
		json.NewEncoder(stdout).Encode(out)
	} else if currentOK {
		fmt.Fprintf(stdout, "Plugin %q v%s is compatible with this host; the latest compatible release is v%s.\n", *name, *current, res.Latest.Version)
	} else if *current == "" {
		fmt.Fprint(stdout, res.Advice())
	} else {
		fmt.Fprint(stdout, res.Message(*current))
	}
	if res.Latest == nil {
		return 1
	}
	return 0
}
