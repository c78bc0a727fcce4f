package main

import (
	"fmt"
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
)

// version is this plugin's release.
const version = "1.3.0"

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New(version,
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/memory",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()}),
	)
}

func main() {
	cat, err := newCatalog()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(objectstore.Cookie, cat)
}
