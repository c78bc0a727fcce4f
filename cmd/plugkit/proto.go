package main

import (
	"fmt"
	"io"
)

func init() {
	commands["proto"] = command{
		summary: "check .proto files for breaking changes (breaking, history)",
		run:     runProto,
	}
}

// runProto is implemented together with package protocheck.
func runProto(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "plugkit proto: not built yet")
	return 1
}
