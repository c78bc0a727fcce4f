package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/handshake"
)

// Kind is the plugin kind of the example object stores.
const Kind = "objectstore"

// CapPresign is the capability of objectstore v2.1: Presign works.
const CapPresign = "presign"

// Cookie is the magic cookie of the example plugins.
var Cookie = handshake.Cookie{Key: "PLUGKIT_EXAMPLE_PLUGIN", Value: "objectstore"}

// ChunkSize is the size of the chunks Put sends.
const ChunkSize = 256 << 10

// Put stores data under key and checks the store's SHA-256 of it.
func Put(ctx context.Context, c objectstorev1.ObjectStoreClient, key string, data []byte) error {
	stream, err := c.Put(ctx)
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err := stream.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Key{Key: key}}); err != nil {
		return fmt.Errorf("put %q: %w", key, putErr(stream, err))
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), ChunkSize)
		if err := stream.Send(&objectstorev1.PutRequest{Part: &objectstorev1.PutRequest_Chunk{Chunk: rest[:n]}}); err != nil {
			return fmt.Errorf("put %q: %w", key, putErr(stream, err))
		}
		rest = rest[n:]
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	sum := sha256.Sum256(data)
	if resp.GetSize() != int64(len(data)) || resp.GetSha256() != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("put %q: the store kept %d bytes with SHA-256 %s, but %d bytes with %x were sent", key, resp.GetSize(), resp.GetSha256(), len(data), sum)
	}
	return nil
}

// putErr returns the server's error for a stream whose Send failed: Send
// reports only io.EOF, the status is in CloseAndRecv.
func putErr(stream interface {
	CloseAndRecv() (*objectstorev1.PutResponse, error)
}, err error) error {
	if errors.Is(err, io.EOF) {
		if _, rerr := stream.CloseAndRecv(); rerr != nil {
			return rerr
		}
	}
	return err
}

// Get reads the whole object stored under key.
func Get(ctx context.Context, c objectstorev1.ObjectStoreClient, key string) ([]byte, error) {
	stream, err := c.Get(ctx, &objectstorev1.GetRequest{Key: key})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	var buf bytes.Buffer
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("get %q: %w", key, err)
		}
		buf.Write(msg.GetChunk())
	}
}
