package main

import (
	"os"
	"strings"
)

// keptMarker starts the part of BENCHMARKS.md that other commands measure
// (the conformance matrix, ...): the report keeps it as it is.
const keptMarker = "<!-- kept by make bench: figures measured by other commands, each saying how -->"

// withKept appends the kept part of the report already at path, if any,
// to the freshly rendered report.
func withKept(rendered, path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return rendered
	}
	_, kept, ok := strings.Cut(string(old), keptMarker)
	if !ok {
		return rendered
	}
	return strings.TrimRight(rendered, "\n") + "\n\n" + keptMarker + kept
}
