package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev3 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v3"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v3/objectstorev3plugin"
	_ "github.com/plugkit/plugkit/plugin/traceexport" // spans exported where OTEL_* says (the demo's console)
)

const version = "3.0.0"

// store keeps every version of every object in memory.
type store struct {
	objectstorev3.UnimplementedObjectStoreServer

	mu       sync.Mutex
	versions map[string][][]byte
}

// Put stores a new version; version IDs are "v1", "v2", ... per key.
func (s *store) Put(_ context.Context, req *objectstorev3.PutRequest) (*objectstorev3.PutResponse, error) {
	if req.GetKey() == "" {
		return nil, status.Error(codes.InvalidArgument, "put: the key is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[req.GetKey()] = append(s.versions[req.GetKey()], bytes.Clone(req.GetData()))
	return &objectstorev3.PutResponse{VersionId: fmt.Sprintf("v%d", len(s.versions[req.GetKey()]))}, nil
}

// Get reads one version, or the latest when none is named.
func (s *store) Get(_ context.Context, req *objectstorev3.GetRequest) (*objectstorev3.GetResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.versions[req.GetKey()]
	if len(vs) == 0 {
		return nil, status.Errorf(codes.NotFound, "get: no object %q", req.GetKey())
	}
	if req.GetVersionId() == "" {
		return &objectstorev3.GetResponse{Data: vs[len(vs)-1]}, nil
	}
	n, err := strconv.Atoi(strings.TrimPrefix(req.GetVersionId(), "v"))
	if err != nil || !strings.HasPrefix(req.GetVersionId(), "v") || n < 1 || n > len(vs) {
		return nil, status.Errorf(codes.NotFound, "get: object %q has no version %q (it has v1 to v%d)", req.GetKey(), req.GetVersionId(), len(vs))
	}
	return &objectstorev3.GetResponse{Data: vs[n-1]}, nil
}

// newCatalog declares what this plugin serves: main serves it as a
// binary, and the tests serve it inside the test process (plugintest).
func newCatalog() (*catalog.Catalog, error) {
	return catalog.New(version,
		objectstorev3plugin.Implement("example.com/future", &store{versions: map[string][][]byte{}}),
	)
}

func main() { catalog.Main(objectstore.Cookie, newCatalog) }
