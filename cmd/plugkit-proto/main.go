package main

import (
	"os"
	"runtime/debug"

	"github.com/plugkit/plugkit/internal/protocli"
)

func main() {
	// One short-lived run that allocates a lot while compiling: collect
	// garbage less eagerly (the heap may grow to nine times the live data).
	debug.SetGCPercent(800)
	os.Exit(protocli.Run("plugkit-proto", os.Args[1:], os.Stdout, os.Stderr))
}
