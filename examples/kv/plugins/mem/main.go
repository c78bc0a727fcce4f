// Command mem is an in-memory kv plugin: example.com/mem speaks kv 2.1;
// example.com/memv1, the same store, only v1, as an older release would.
package main

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	kvv1 "example.com/kv/gen/kv/v1"
	"example.com/kv/gen/kv/v1/kvv1plugin"
	kvv2 "example.com/kv/gen/kv/v2"
	"example.com/kv/gen/kv/v2/kvv2plugin"
	"github.com/plugkit/plugkit/catalog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type store struct {
	kvv2.UnimplementedKVServer
	m sync.Map // key -> the *kvv2.PutRequest that stored it
}

func (s *store) Get(_ context.Context, req *kvv2.GetRequest) (*kvv2.GetResponse, error) {
	put, ok := s.m.Load(req.GetKey())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no key %q", req.GetKey())
	}
	return &kvv2.GetResponse{Value: put.(*kvv2.PutRequest).GetValue()}, nil
}

func (s *store) Put(_ context.Context, req *kvv2.PutRequest) (*kvv2.PutResponse, error) {
	s.m.Store(req.GetKey(), req)
	if ttl := req.GetTtlSeconds(); ttl > 0 {
		time.AfterFunc(time.Duration(ttl)*time.Second, func() { s.m.CompareAndDelete(req.GetKey(), req) })
	}
	return &kvv2.PutResponse{}, nil
}

func (s *store) Delete(_ context.Context, req *kvv2.DeleteRequest) (*kvv2.DeleteResponse, error) {
	s.m.Delete(req.GetKey())
	return &kvv2.DeleteResponse{}, nil
}

func (s *store) List(req *kvv2.ListRequest, stream grpc.ServerStreamingServer[kvv2.ListResponse]) error {
	var keys []string
	for k := range s.m.Range {
		if strings.HasPrefix(k.(string), req.GetPrefix()) {
			keys = append(keys, k.(string))
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := stream.Send(&kvv2.ListResponse{Key: k}); err != nil {
			return err
		}
	}
	return nil
}

// newCatalog is what main serves, and the tests serve in-process.
func newCatalog() (*catalog.Catalog, error) {
	s := &store{}
	v1 := kvv2plugin.V1(s) // Get, unchanged since v1; Put changed:
	v1.Put = func(ctx context.Context, req *kvv1.PutRequest) (*kvv1.PutResponse, error) {
		_, err := s.Put(ctx, &kvv2.PutRequest{Key: req.GetKey(), Value: req.GetValue()})
		return &kvv1.PutResponse{}, err
	}
	return catalog.New("2.1.0", kvv2plugin.Implement("example.com/mem", s), kvv1plugin.Implement("example.com/memv1", v1.Server()))
}

func main() { catalog.Main(kvv2.Cookie, newCatalog) }
