package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/manager"
)

// StoreV1 is the host's view of an objectstore v1 store: what a host of
// major 1 uses, and the part of Store that v1 already had.
type StoreV1 interface {
	// Init configures the store; the configuration is replayed whenever
	// the plugin process is restarted.
	Init(ctx context.Context, config map[string]string) error
	Put(ctx context.Context, key string, data []byte) error
	Get(ctx context.Context, key string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]string, error)
	Delete(ctx context.Context, key string) error
	Exists(ctx context.Context, key string) (bool, error)
	// Info says what the store is connected to.
	Info() manager.Info
}

// Store is the host's view of an object store: the latest major, v2, as a
// Go interface. Plugins that speak only v1 are adapted to it.
type Store interface {
	StoreV1
	// Stat describes an object (v2).
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Copy copies an object (v2).
	Copy(ctx context.Context, src, dst string) error
	// Presign returns a URL for an object; it needs the "presign"
	// capability (v2.1) and fails with ErrNoCapability otherwise.
	Presign(ctx context.Context, key string) (string, error)
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Key    string
	Size   int64
	SHA256 string
}

// ErrNoCapability reports a call that needs a capability the plugin did
// not announce.
var ErrNoCapability = errors.New("the plugin does not have this capability")

// Open returns the object store named name (such as "example.com/fs"),
// speaking v2, or v1 through the adapter.
func Open(ctx context.Context, m *manager.Manager, name string) (Store, error) {
	return manager.Dispense(ctx, m, Kind, name, V2Majors())
}

// V2Majors is what a host of major 2 dispenses with: v2, or v1 through
// the adapter. Open uses it; so does the v2 host of the conformance
// matrix.
func V2Majors() manager.Majors[Store] {
	return manager.Majors[Store]{
		2: func(conn *manager.Conn, info manager.Info) (Store, error) {
			return newRemote(conn, info, v2Calls{objectstorev2.NewObjectStoreClient(conn)}), nil
		},
		1: func(conn *manager.Conn, info manager.Info) (Store, error) {
			return newRemote(conn, info, adaptV1(objectstorev1.NewObjectStoreClient(conn))), nil
		},
	}
}

// calls is what remote needs from a major version.
type calls interface {
	init(ctx context.Context, cc grpc.ClientConnInterface, config map[string]string) error
	put(ctx context.Context, key string, data []byte) error
	get(ctx context.Context, key string) ([]byte, error)
	list(ctx context.Context, prefix string) ([]string, error)
	del(ctx context.Context, key string) error
	exists(ctx context.Context, key string) (bool, error)
	stat(ctx context.Context, key string) (ObjectInfo, error)
	copy(ctx context.Context, src, dst string) error
	presign(ctx context.Context, key string) (string, error)
}

// remote is a Store on a manager connection; it remembers Init's
// configuration and replays it after a restart.
type remote struct {
	calls
	conn *manager.Conn
	info manager.Info

	mu     sync.Mutex
	config map[string]string
	hooked bool
}

func newRemote(conn *manager.Conn, info manager.Info, c calls) *remote {
	return &remote{calls: c, conn: conn, info: info}
}

func (r *remote) Info() manager.Info { return r.info }

func (r *remote) Init(ctx context.Context, config map[string]string) error {
	if err := r.calls.init(ctx, r.conn, config); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.config = config
	if !r.hooked {
		r.hooked = true
		r.conn.OnRestart(func(ctx context.Context, cc grpc.ClientConnInterface) error {
			r.mu.Lock()
			cfg := r.config
			r.mu.Unlock()
			return r.calls.init(ctx, cc, cfg)
		})
	}
	return nil
}

func (r *remote) Put(ctx context.Context, key string, data []byte) error {
	return r.put(ctx, key, data)
}
func (r *remote) Get(ctx context.Context, key string) ([]byte, error) { return r.get(ctx, key) }
func (r *remote) List(ctx context.Context, prefix string) ([]string, error) {
	return r.list(ctx, prefix)
}
func (r *remote) Delete(ctx context.Context, key string) error         { return r.del(ctx, key) }
func (r *remote) Exists(ctx context.Context, key string) (bool, error) { return r.exists(ctx, key) }
func (r *remote) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return r.stat(ctx, key)
}
func (r *remote) Copy(ctx context.Context, src, dst string) error { return r.copy(ctx, src, dst) }
func (r *remote) Presign(ctx context.Context, key string) (string, error) {
	if !r.info.Has(CapPresign) {
		return "", fmt.Errorf("presign %q with %s v%d.%d: %w", key, r.info.Name, r.info.Major, r.info.Minor, ErrNoCapability)
	}
	return r.presign(ctx, key)
}

// v2Calls speaks objectstore.v2 directly.
type v2Calls struct {
	c objectstorev2.ObjectStoreClient
}

func (v v2Calls) init(ctx context.Context, cc grpc.ClientConnInterface, config map[string]string) error {
	_, err := objectstorev2.NewObjectStoreClient(cc).Init(ctx, &objectstorev2.InitRequest{Config: config})
	return err
}

func (v v2Calls) put(ctx context.Context, key string, data []byte) error {
	stream, err := v.c.Put(ctx)
	if err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	send := func(m *objectstorev2.PutRequest) error { return stream.Send(m) }
	if err := sendPut(key, data,
		func(k string) error {
			return send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Key{Key: k}})
		},
		func(c []byte) error {
			return send(&objectstorev2.PutRequest{Part: &objectstorev2.PutRequest_Chunk{Chunk: c}})
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

func (v v2Calls) get(ctx context.Context, key string) ([]byte, error) {
	stream, err := v.c.Get(ctx, &objectstorev2.GetRequest{Key: key})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return receiveAll(key, func() ([]byte, error) { m, err := stream.Recv(); return m.GetChunk(), err })
}

func (v v2Calls) list(ctx context.Context, prefix string) ([]string, error) {
	resp, err := v.c.List(ctx, &objectstorev2.ListRequest{Prefix: prefix})
	return resp.GetKeys(), err
}

func (v v2Calls) del(ctx context.Context, key string) error {
	_, err := v.c.Delete(ctx, &objectstorev2.DeleteRequest{Key: key})
	return err
}

func (v v2Calls) exists(ctx context.Context, key string) (bool, error) {
	resp, err := v.c.Exists(ctx, &objectstorev2.ExistsRequest{Key: key})
	return resp.GetExists(), err
}

func (v v2Calls) stat(ctx context.Context, key string) (ObjectInfo, error) {
	resp, err := v.c.Stat(ctx, &objectstorev2.StatRequest{Key: key})
	if err != nil {
		return ObjectInfo{}, err
	}
	return ObjectInfo{Key: resp.GetKey(), Size: resp.GetSize(), SHA256: resp.GetSha256()}, nil
}

func (v v2Calls) copy(ctx context.Context, src, dst string) error {
	_, err := v.c.Copy(ctx, &objectstorev2.CopyRequest{Source: src, Destination: dst})
	return err
}

func (v v2Calls) presign(ctx context.Context, key string) (string, error) {
	resp, err := v.c.Presign(ctx, &objectstorev2.PresignRequest{Key: key, TtlSeconds: 3600})
	return resp.GetUrl(), err
}

// sendPut sends a key and then data in chunks.
func sendPut(key string, data []byte, sendKey func(string) error, sendChunk func([]byte) error) error {
	if err := sendKey(key); err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), ChunkSize)
		if err := sendChunk(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// checkPut compares what the store says it kept with what was sent.
func checkPut(key string, data []byte, size int64, sum string) error {
	want := sha256.Sum256(data)
	if size != int64(len(data)) || sum != hex.EncodeToString(want[:]) {
		return fmt.Errorf("put %q: the store kept %d bytes with SHA-256 %s, but %d bytes with %x were sent", key, size, sum, len(data), want)
	}
	return nil
}

// receiveAll collects a Get stream.
func receiveAll(key string, recv func() ([]byte, error)) ([]byte, error) {
	var out []byte
	for {
		chunk, err := recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get %q: %w", key, err)
		}
		out = append(out, chunk...)
	}
}

// Pid is the process ID of the plugin serving s, or 0 (for demos and
// tests that kill it).
func Pid(s Store) int {
	if r, ok := s.(*remote); ok {
		return r.conn.Pid()
	}
	return 0
}
