// Command memory is an example plugin: an in-memory object store serving
// objectstore.v1.ObjectStore through plugkit. Its host sets the cookie
// PLUGKIT_EXAMPLE_PLUGIN=objectstore and speaks app protocol version 1.
//
// Run by hand it says what it is; to look inside it:
//
//	plugkit inspect ./memory --cookie PLUGKIT_EXAMPLE_PLUGIN=objectstore --versions 1
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/examples/objectstore"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/broker"
	"github.com/plugkit/plugkit/plugin"
)

// chunkSize is the size of the chunks Get streams.
const chunkSize = 256 << 10

func main() {
	plugin.Serve(plugin.Config{
		Cookie: objectstore.Cookie,
		Versions: map[int]plugin.Register{
			1: func(s *grpc.Server, _ *broker.Broker) error {
				objectstorev1.RegisterObjectStoreServer(s, newStore())
				return nil
			},
		},
	})
}

type store struct {
	objectstorev1.UnimplementedObjectStoreServer
	mu      sync.RWMutex
	objects map[string][]byte
	config  map[string]string
}

func newStore() *store { return &store{objects: map[string][]byte{}} }

func (s *store) Init(_ context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	s.mu.Lock()
	s.config = req.GetConfig()
	s.mu.Unlock()
	return &objectstorev1.InitResponse{}, nil
}

func (s *store) Put(stream grpc.ClientStreamingServer[objectstorev1.PutRequest, objectstorev1.PutResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "put: reading the key: %v", err)
	}
	key := first.GetKey()
	if key == "" {
		return status.Error(codes.InvalidArgument, "put: the first message must carry a non-empty key")
	}
	var data []byte
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if msg.GetKey() != "" {
			return status.Error(codes.InvalidArgument, "put: only the first message may carry a key")
		}
		data = append(data, msg.GetChunk()...)
	}
	sum := sha256.Sum256(data)
	s.mu.Lock()
	s.objects[key] = data
	s.mu.Unlock()
	return stream.SendAndClose(&objectstorev1.PutResponse{Key: key, Size: int64(len(data)), Sha256: hex.EncodeToString(sum[:])})
}

func (s *store) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	s.mu.RLock()
	data, ok := s.objects[req.GetKey()]
	s.mu.RUnlock()
	if !ok {
		return status.Errorf(codes.NotFound, "get: no object %q", req.GetKey())
	}
	for len(data) > 0 {
		n := min(len(data), chunkSize)
		if err := stream.Send(&objectstorev1.GetResponse{Chunk: data[:n]}); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func (s *store) List(_ context.Context, req *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	s.mu.RLock()
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, req.GetPrefix()) {
			keys = append(keys, k)
		}
	}
	s.mu.RUnlock()
	sort.Strings(keys)
	return &objectstorev1.ListResponse{Keys: keys}, nil
}

func (s *store) Delete(_ context.Context, req *objectstorev1.DeleteRequest) (*objectstorev1.DeleteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[req.GetKey()]; !ok {
		return nil, status.Errorf(codes.NotFound, "delete: no object %q", req.GetKey())
	}
	delete(s.objects, req.GetKey())
	return &objectstorev1.DeleteResponse{}, nil
}

func (s *store) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	s.mu.RLock()
	_, ok := s.objects[req.GetKey()]
	s.mu.RUnlock()
	return &objectstorev1.ExistsResponse{Exists: ok}, nil
}
