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

// version is this plugin's release. plugkit demo builds other releases
// of it to show an upgrade: go build -ldflags "-X main.version=2.2.0".
var version = "2.1.0"

// brokenRelease, set at link time (-ldflags "-X main.brokenRelease=yes"),
// builds a broken release that dies at its first call after Init, as
// plugkit demo's rollback shows.
var brokenRelease string

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
	var b backend.Backend = store
	if brokenRelease != "" {
		b = broken{store}
	}
	return catalog.New(version,
		objectstorev2plugin.Implement("example.com/fs", backend.V2{B: b, PresignURL: store.FileURL}),
		objectstorev1plugin.Implement("example.com/fs", backend.V1{B: b}),
	)
}

// broken is the backend of a broken release: Init works, and the process
// exits at the first call after it.
type broken struct{ *backend.FS }

func (broken) Put(string, []byte) error      { os.Exit(3); return nil }
func (broken) Get(string) ([]byte, error)    { os.Exit(3); return nil, nil }
func (broken) List(string) ([]string, error) { os.Exit(3); return nil, nil }
func (broken) Delete(string) error           { os.Exit(3); return nil }

func main() { catalog.Main(objectstore.Cookie, newCatalog) }
