package main

import (
	"fmt"
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
)

const version = "2.1.0"

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	store := &backend.FS{}
	return catalog.New(version,
		catalog.Implement[objectstorev2.ObjectStoreServer](objectstore.Kind, 2, 1, "example.com/fs",
			&objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: store, PresignURL: store.FileURL}, objectstore.CapPresign),
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/fs",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: store}),
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
