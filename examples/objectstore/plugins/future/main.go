package main

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev3 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v3"
)

const version = "3.0.0"

type store struct {
	objectstorev3.UnimplementedObjectStoreServer
}

func (store) Put(context.Context, *objectstorev3.PutRequest) (*objectstorev3.PutResponse, error) {
	return nil, status.Error(codes.Unimplemented, "the future is not here yet")
}

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New(version,
		catalog.Implement[objectstorev3.ObjectStoreServer](objectstore.Kind, 3, 0, "example.com/future",
			&objectstorev3.ObjectStore_ServiceDesc, store{}),
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
