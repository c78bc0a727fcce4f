package objectstore

import (
	"context"
	"fmt"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev3 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v3"
	"github.com/plugkit/plugkit/manager"
)

// OpenV1 dispenses the object store name as a host of objectstore major 1
// does: v1 only, no adapter.
func OpenV1(ctx context.Context, m *manager.Manager, name string) (StoreV1, error) {
	return manager.Dispense(ctx, m, Kind, name, V1Majors())
}

// V1Majors is what a host of major 1 dispenses with.
func V1Majors() manager.Majors[StoreV1] {
	return manager.Majors[StoreV1]{
		1: func(conn *manager.Conn, info manager.Info) (StoreV1, error) {
			return newRemote(conn, info, adaptV1(objectstorev1.NewObjectStoreClient(conn))), nil
		},
	}
}

// StoreV3 is the host's view of an objectstore v3 store, which keeps every
// version of an object. No host in this repository ships v3 yet; it is
// here for the v3 plugins' own tests and the v3 conformance suite.
type StoreV3 interface {
	// Put stores a new version of an object and returns its version ID.
	Put(ctx context.Context, key string, data []byte) (version string, err error)
	// Get reads one version of an object; an empty version is the latest.
	Get(ctx context.Context, key, version string) ([]byte, error)
	// Info says what the store is connected to.
	Info() manager.Info
}

// OpenV3 dispenses the object store name as a host of objectstore major 3
// would: v3 only.
func OpenV3(ctx context.Context, m *manager.Manager, name string) (StoreV3, error) {
	return manager.Dispense(ctx, m, Kind, name, V3Majors())
}

// V3Majors is what a host of major 3 dispenses with.
func V3Majors() manager.Majors[StoreV3] {
	return manager.Majors[StoreV3]{
		3: func(conn *manager.Conn, info manager.Info) (StoreV3, error) {
			return v3Client{objectstorev3.NewObjectStoreClient(conn), info}, nil
		},
	}
}

type v3Client struct {
	c    objectstorev3.ObjectStoreClient
	info manager.Info
}

func (v v3Client) Put(ctx context.Context, key string, data []byte) (string, error) {
	resp, err := v.c.Put(ctx, &objectstorev3.PutRequest{Key: key, Data: data})
	if err != nil {
		return "", fmt.Errorf("put %q: %w", key, err)
	}
	return resp.GetVersionId(), nil
}

func (v v3Client) Get(ctx context.Context, key, version string) ([]byte, error) {
	resp, err := v.c.Get(ctx, &objectstorev3.GetRequest{Key: key, VersionId: version})
	if err != nil {
		return nil, fmt.Errorf("get %q version %q: %w", key, version, err)
	}
	return resp.GetData(), nil
}

func (v v3Client) Info() manager.Info { return v.info }
