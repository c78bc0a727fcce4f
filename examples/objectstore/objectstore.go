package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
)

// Kind is the plugin kind of the example object stores (generated from its
// protocol files, as the two names below).
const Kind = objectstorev2.Kind

// CapPresign is the capability of objectstore v2.1: Presign works.
const CapPresign = objectstorev2.CapPresign

// Cookie is the magic cookie of the example plugins.
var Cookie = objectstorev2.Cookie

// ChunkSize is the size of the chunks Put sends.
const ChunkSize = 256 << 10

// Put stores data under key through objectstore.v1 and checks the
// store's SHA-256 of it.
func Put(ctx context.Context, c objectstorev1.ObjectStoreClient, key string, data []byte) error {
	stream, err := c.Put(ctx)
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err := sendPut(key, data,
		func(k string) error {
			return stream.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Key{Key: k}})
		},
		func(c []byte) error {
			return stream.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Chunk{Chunk: c}})
		}); err != nil {
		_, rerr := stream.CloseAndRecv()
		return fmt.Errorf("put %q: %w", key, sendErr(err, rerr))
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	return checkPut(key, data, resp.GetSize(), resp.GetSha256())
}

// sendErr picks the error to report for a Put whose Send failed: Send
// says only io.EOF when the server ended the stream, and the server's
// status comes from CloseAndRecv.
func sendErr(sendErr, closeErr error) error {
	if errors.Is(sendErr, io.EOF) && closeErr != nil {
		return closeErr
	}
	return sendErr
}

// Get reads the whole object stored under key through objectstore.v1.
func Get(ctx context.Context, c objectstorev1.ObjectStoreClient, key string) ([]byte, error) {
	stream, err := c.Get(ctx, &objectstorev1.GetRequest{Key: key})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return receiveAll(key, func() ([]byte, error) { m, err := stream.Recv(); return m.GetChunk(), err })
}
