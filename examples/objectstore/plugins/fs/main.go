// Command fs is an example plugin: an object store that keeps each object
// as a file in a directory (Init config "dir", or OBJECTSTORE_FS_DIR). It
// serves kind "objectstore" as "example.com/fs" at major 2 (minor 1, with
// the "presign" capability: file:// URLs) and at major 1, from one binary.
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

func main() {
	store := &backend.FS{}
	cat, err := catalog.New(version,
		catalog.Implement[objectstorev2.ObjectStoreServer](objectstore.Kind, 2, 1, "example.com/fs",
			&objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: store, PresignURL: store.FileURL}, objectstore.CapPresign),
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/fs",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: store}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(objectstore.Cookie, cat)
}
