package main

import (
	"io"
	"runtime/debug"

	"github.com/plugkit/plugkit/internal/protocli"
)

func init() {
	commands["proto"] = command{
		summary: "check .proto files for breaking changes (breaking, history, rules)",
		run:     runProto,
		plain:   true, // run once per pair in CI: no interrupt handler to start
	}
}

// runProto runs "plugkit proto ...". The command is short-lived and
// allocates a lot while compiling: a less eager garbage collector saves
// time (the heap may grow to nine times the live data before a collection).
func runProto(args []string, stdout, stderr io.Writer) int {
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	return protocli.Run("plugkit proto", args, stdout, stderr)
}
