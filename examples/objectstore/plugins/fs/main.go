package main

import (
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1/objectstorev1plugin"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2/objectstorev2plugin"
	_ "github.com/plugkit/plugkit/plugin/traceexport" // spans exported where OTEL_* says (the demo's console)
)

const version = "2.1.0"

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	store := &backend.FS{}
	if os.Getenv(backend.DirEnv) != "" {
		// Run as a service shared by many hosts (PLUGKIT_LISTEN), and by
		// replicas over one directory: ready before any host's Init.
		if err := store.Init(nil); err != nil {
			return nil, err
		}
	}
	return catalog.New(version,
		objectstorev2plugin.Implement("example.com/fs", backend.V2{B: store, PresignURL: store.FileURL}),
		objectstorev1plugin.Implement("example.com/fs", backend.V1{B: store}),
	)
}

func main() { catalog.Main(objectstore.Cookie, newCatalog) }
