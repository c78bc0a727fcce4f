package testutil

import (
	"path/filepath"
	"runtime"
)

// GoTool returns the path of the go command of the toolchain that built
// the running test binary, so that a test builds and lists packages with
// the same Go as `go test` (not whichever go comes first on PATH).
func GoTool() string {
	// A test binary runs on the machine that built it, where the root it
	// was built with is the toolchain's: the reason runtime.GOROOT is
	// deprecated (a binary copied elsewhere) does not apply.
	//lint:ignore SA1019 see above
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
