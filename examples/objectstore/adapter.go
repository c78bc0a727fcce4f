package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/grpc"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
)

// adaptV1 presents an objectstore.v1 client as the v2 calls the host
// uses. The v2 additions are built from v1 calls:
//
//   - Stat streams the object with Get and measures and hashes it: correct
//     for every v1 store, at the cost of reading the object.
//   - Copy is Get followed by Put: correct, not atomic (a reader may see
//     the destination only after Put completes, which v2 stores also
//     allow), and it moves the bytes through the host.
//   - Presign is not offered (v1 has no capability for it).
//
// Both are safe: they only call v1 operations that exist, with the same
// meaning, and report the v1 store's errors unchanged.
func adaptV1(c objectstorev1.ObjectStoreClient) calls { return v1Adapter{c} }

type v1Adapter struct {
	c objectstorev1.ObjectStoreClient
}

func (a v1Adapter) init(ctx context.Context, cc grpc.ClientConnInterface, config map[string]string) error {
	_, err := objectstorev1.NewObjectStoreClient(cc).Init(ctx, &objectstorev1.InitRequest{Config: config})
	return err
}

func (a v1Adapter) put(ctx context.Context, key string, data []byte) error {
	return Put(ctx, a.c, key, data)
}

func (a v1Adapter) get(ctx context.Context, key string) ([]byte, error) { return Get(ctx, a.c, key) }

func (a v1Adapter) list(ctx context.Context, prefix string) ([]string, error) {
	resp, err := a.c.List(ctx, &objectstorev1.ListRequest{Prefix: prefix})
	return resp.GetKeys(), err
}

func (a v1Adapter) del(ctx context.Context, key string) error {
	_, err := a.c.Delete(ctx, &objectstorev1.DeleteRequest{Key: key})
	return err
}

func (a v1Adapter) exists(ctx context.Context, key string) (bool, error) {
	resp, err := a.c.Exists(ctx, &objectstorev1.ExistsRequest{Key: key})
	return resp.GetExists(), err
}

// stat reads the object to measure it.
func (a v1Adapter) stat(ctx context.Context, key string) (ObjectInfo, error) {
	data, err := Get(ctx, a.c, key)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat (adapted from v1 Get): %w", err)
	}
	sum := sha256.Sum256(data)
	return ObjectInfo{Key: key, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// copy reads the source and writes the destination.
func (a v1Adapter) copy(ctx context.Context, src, dst string) error {
	data, err := Get(ctx, a.c, src)
	if err != nil {
		return fmt.Errorf("copy (adapted from v1 Get+Put): %w", err)
	}
	if err := Put(ctx, a.c, dst, data); err != nil {
		return fmt.Errorf("copy (adapted from v1 Get+Put): %w", err)
	}
	return nil
}

func (a v1Adapter) presign(context.Context, string) (string, error) {
	return "", fmt.Errorf("presign: %w (objectstore v1)", ErrNoCapability)
}
