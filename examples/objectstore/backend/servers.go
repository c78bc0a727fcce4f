package backend

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
)

// chunkSize is the size of the chunks Get streams.
const chunkSize = 256 << 10

// toStatus maps backend errors to gRPC codes.
func toStatus(op, key string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotFound) {
		return status.Errorf(codes.NotFound, "%s: no object %q", op, key)
	}
	return status.Errorf(codes.Internal, "%s %q: %v", op, key, err)
}

// receivePut reads a Put stream: a key, then chunks.
func receivePut(recv func() (key string, chunk []byte, err error)) (string, []byte, error) {
	key, _, err := recv()
	if err != nil {
		return "", nil, status.Errorf(codes.InvalidArgument, "put: reading the key: %v", err)
	}
	if key == "" {
		return "", nil, status.Error(codes.InvalidArgument, "put: the first message must carry a non-empty key")
	}
	var data []byte
	for {
		k, chunk, err := recv()
		if errors.Is(err, io.EOF) {
			return key, data, nil
		}
		if err != nil {
			return "", nil, err
		}
		if k != "" {
			return "", nil, status.Error(codes.InvalidArgument, "put: only the first message may carry a key")
		}
		data = append(data, chunk...)
	}
}

// sendChunks streams data in chunkSize pieces.
func sendChunks(data []byte, send func([]byte) error) error {
	for len(data) > 0 {
		n := min(len(data), chunkSize)
		if err := send(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// V1 serves objectstore.v1 from a backend.
type V1 struct {
	objectstorev1.UnimplementedObjectStoreServer
	B Backend
}

// Init configures the backend.
func (s V1) Init(_ context.Context, req *objectstorev1.InitRequest) (*objectstorev1.InitResponse, error) {
	if err := s.B.Init(req.GetConfig()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &objectstorev1.InitResponse{}, nil
}

// Put stores an object.
func (s V1) Put(stream grpc.ClientStreamingServer[objectstorev1.PutRequest, objectstorev1.PutResponse]) error {
	key, data, err := receivePut(func() (string, []byte, error) {
		m, err := stream.Recv()
		return m.GetKey(), m.GetChunk(), err
	})
	if err != nil {
		return err
	}
	if err := s.B.Put(key, data); err != nil {
		return toStatus("put", key, err)
	}
	return stream.SendAndClose(&objectstorev1.PutResponse{Key: key, Size: int64(len(data)), Sha256: Sum(data)})
}

// Get streams an object.
func (s V1) Get(req *objectstorev1.GetRequest, stream grpc.ServerStreamingServer[objectstorev1.GetResponse]) error {
	data, err := s.B.Get(req.GetKey())
	if err != nil {
		return toStatus("get", req.GetKey(), err)
	}
	return sendChunks(data, func(c []byte) error { return stream.Send(&objectstorev1.GetResponse{Chunk: c}) })
}

// List lists keys by prefix.
func (s V1) List(_ context.Context, req *objectstorev1.ListRequest) (*objectstorev1.ListResponse, error) {
	keys, err := s.B.List(req.GetPrefix())
	return &objectstorev1.ListResponse{Keys: keys}, toStatus("list", req.GetPrefix(), err)
}

// Delete removes an object.
func (s V1) Delete(_ context.Context, req *objectstorev1.DeleteRequest) (*objectstorev1.DeleteResponse, error) {
	return &objectstorev1.DeleteResponse{}, toStatus("delete", req.GetKey(), s.B.Delete(req.GetKey()))
}

// Exists reports whether an object is stored.
func (s V1) Exists(_ context.Context, req *objectstorev1.ExistsRequest) (*objectstorev1.ExistsResponse, error) {
	_, err := s.B.Get(req.GetKey())
	if errors.Is(err, ErrNotFound) {
		return &objectstorev1.ExistsResponse{}, nil
	}
	return &objectstorev1.ExistsResponse{Exists: err == nil}, toStatus("exists", req.GetKey(), err)
}

// V2 serves objectstore.v2 from a backend. With PresignURL set it also
// serves the "presign" capability of minor 2.1.
type V2 struct {
	objectstorev2.UnimplementedObjectStoreServer
	B          Backend
	PresignURL func(key string, ttl time.Duration) (string, error)
}

// Init configures the backend.
func (s V2) Init(_ context.Context, req *objectstorev2.InitRequest) (*objectstorev2.InitResponse, error) {
	if err := s.B.Init(req.GetConfig()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &objectstorev2.InitResponse{}, nil
}

// Put stores an object.
func (s V2) Put(stream grpc.ClientStreamingServer[objectstorev2.PutRequest, objectstorev2.PutResponse]) error {
	key, data, err := receivePut(func() (string, []byte, error) {
		m, err := stream.Recv()
		return m.GetKey(), m.GetChunk(), err
	})
	if err != nil {
		return err
	}
	if err := s.B.Put(key, data); err != nil {
		return toStatus("put", key, err)
	}
	return stream.SendAndClose(&objectstorev2.PutResponse{Key: key, Size: int64(len(data)), Sha256: Sum(data)})
}

// Get streams an object.
func (s V2) Get(req *objectstorev2.GetRequest, stream grpc.ServerStreamingServer[objectstorev2.GetResponse]) error {
	data, err := s.B.Get(req.GetKey())
	if err != nil {
		return toStatus("get", req.GetKey(), err)
	}
	return sendChunks(data, func(c []byte) error { return stream.Send(&objectstorev2.GetResponse{Chunk: c}) })
}

// List lists keys by prefix.
func (s V2) List(_ context.Context, req *objectstorev2.ListRequest) (*objectstorev2.ListResponse, error) {
	keys, err := s.B.List(req.GetPrefix())
	return &objectstorev2.ListResponse{Keys: keys}, toStatus("list", req.GetPrefix(), err)
}

// Delete removes an object.
func (s V2) Delete(_ context.Context, req *objectstorev2.DeleteRequest) (*objectstorev2.DeleteResponse, error) {
	return &objectstorev2.DeleteResponse{}, toStatus("delete", req.GetKey(), s.B.Delete(req.GetKey()))
}

// Exists reports whether an object is stored.
func (s V2) Exists(_ context.Context, req *objectstorev2.ExistsRequest) (*objectstorev2.ExistsResponse, error) {
	_, err := s.B.Get(req.GetKey())
	if errors.Is(err, ErrNotFound) {
		return &objectstorev2.ExistsResponse{}, nil
	}
	return &objectstorev2.ExistsResponse{Exists: err == nil}, toStatus("exists", req.GetKey(), err)
}

// Stat describes an object.
func (s V2) Stat(_ context.Context, req *objectstorev2.StatRequest) (*objectstorev2.StatResponse, error) {
	data, err := s.B.Get(req.GetKey())
	if err != nil {
		return nil, toStatus("stat", req.GetKey(), err)
	}
	return &objectstorev2.StatResponse{Key: req.GetKey(), Size: int64(len(data)), Sha256: Sum(data)}, nil
}

// Copy copies an object to a new key.
func (s V2) Copy(_ context.Context, req *objectstorev2.CopyRequest) (*objectstorev2.CopyResponse, error) {
	data, err := s.B.Get(req.GetSource())
	if err != nil {
		return nil, toStatus("copy", req.GetSource(), err)
	}
	if err := s.B.Put(req.GetDestination(), data); err != nil {
		return nil, toStatus("copy", req.GetDestination(), err)
	}
	return &objectstorev2.CopyResponse{Size: int64(len(data))}, nil
}

// Presign returns a URL for an object, when the store has the presign
// capability.
func (s V2) Presign(_ context.Context, req *objectstorev2.PresignRequest) (*objectstorev2.PresignResponse, error) {
	if s.PresignURL == nil {
		return nil, status.Error(codes.Unimplemented, "presign: this store does not have the presign capability")
	}
	if _, err := s.B.Get(req.GetKey()); err != nil {
		return nil, toStatus("presign", req.GetKey(), err)
	}
	url, err := s.PresignURL(req.GetKey(), time.Duration(req.GetTtlSeconds())*time.Second)
	if err != nil {
		return nil, toStatus("presign", req.GetKey(), err)
	}
	return &objectstorev2.PresignResponse{Url: url}, nil
}
