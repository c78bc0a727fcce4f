package wazeroversion

import (
	_ "unsafe" // go:linkname

	_ "github.com/tetratelabs/wazero" // it links the version below

	"github.com/plugkit/plugkit/internal/testutil"
)

// version is wazero's own (internal/version), which its command sets with
// -ldflags -X and which wazero reads, once set, instead of the build
// information: the cache is opened later, by the tests.
//
//go:linkname version github.com/tetratelabs/wazero/internal/version.version
var version string

func init() {
	if v, err := testutil.WazeroVersion(); err == nil {
		version = v
	}
}
