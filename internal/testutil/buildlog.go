package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// BuildLogEnv names a file to which the tests append one line for each Go
// program they link (GoBuild, GoBuildWasm) and each WebAssembly compile
// they have done (CompiledWasm): what, how long, and the CPU it took (the
// go command and everything it ran, wasmcompile included). Unset, nothing
// is written. It shows where a cold make test's time goes beyond the
// compiles that make test-compile does first (BENCHMARKS.md, "make test
// cold").
const BuildLogEnv = "PLUGKIT_TEST_BUILDLOG"

// logBuild appends a line for cmd, which ran from start, to the file
// BuildLogEnv names, if any: kind ("link", "wasmcompile"), what it
// built, its wall time and its user and system CPU seconds.
func logBuild(kind, what string, start time.Time, cmd *exec.Cmd) {
	path := os.Getenv(BuildLogEnv)
	if path == "" || cmd.ProcessState == nil {
		return
	}
	st := cmd.ProcessState
	line := fmt.Sprintf("%s\t%s\t%.2f s wall\t%.2f user\t%.2f sys\n", kind, strings.ReplaceAll(what, "\t", " "),
		time.Since(start).Seconds(), st.UserTime().Seconds(), st.SystemTime().Seconds())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	f.WriteString(line)
	f.Close()
}
