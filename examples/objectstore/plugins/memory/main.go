package main

import (
	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1/objectstorev1plugin"
	_ "github.com/plugkit/plugkit/plugin/traceexport" // spans exported where OTEL_* says (the demo's console)
)

// version is this plugin's release; a build may set another
// (-ldflags "-X main.version=1.4.0"), as manager's test of a guest's
// upgrade does.
var version = "1.3.0"

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New(version,
		objectstorev1plugin.Implement("example.com/memory", backend.V1{B: backend.NewMemory()}),
	)
}

func main() { catalog.Main(objectstore.Cookie, newCatalog) }
