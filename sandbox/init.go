package sandbox

import (
	"errors"
	"sync/atomic"

	"github.com/plugkit/plugkit/sandbox/internal/trampoline"
)

// initialized records that this process called Init; Prepare refuses to
// start a plugin otherwise.
var initialized atomic.Bool

// Init is the sandbox's re-exec entry. A host that sandboxes plugins
// calls it first thing in main (and a test binary that does, first thing
// in TestMain), before it parses flags or starts anything:
//
//	func main() {
//		sandbox.Init()
//		...
//	}
//
// Runner.Prepare starts a plugin by running the host's own binary again
// in new namespaces (see the package documentation); in that run Init
// builds the sandbox and executes the plugin in place, and never returns.
// In every other run it returns at once, having done nothing but note
// that it was called: Runner.Prepare refuses to start a plugin in a
// program that did not call it, because the re-executed binary would run
// the host's main instead of the plugin.
func Init() {
	initialized.Store(true)
	trampoline.Init()
}

// errNoInit is Prepare's error in a program that did not call Init.
var errNoInit = errors.New("sandbox: this program did not call sandbox.Init: call it first thing in main (in a test binary, first thing in TestMain); a sandboxed plugin starts by running the host's own binary again, and only sandbox.Init turns that run into the plugin")
