package objectstore

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/internal/testutil"
)

// serve runs a v1 and a v2 server, each over its own in-memory backend.
func serve(t *testing.T) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer()
	objectstorev1.RegisterObjectStoreServer(srv, backend.V1{B: backend.NewMemory()})
	objectstorev2.RegisterObjectStoreServer(srv, backend.V2{B: backend.NewMemory()})
	ln, target := testutil.LocalListener(t)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestAdapterBehavesLikeV2 runs the same operations on a v2 store and on
// a v1 store through the adapter, and expects the same answers.
func TestAdapterBehavesLikeV2(t *testing.T) {
	conn := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	direct := v2Calls{objectstorev2.NewObjectStoreClient(conn)}
	adapted := adaptV1(objectstorev1.NewObjectStoreClient(conn))

	type result struct {
		Stat      ObjectInfo
		CopyGet   []byte
		Keys      []string
		MissStat  codes.Code
		MissCopy  codes.Code
		AfterDel  bool
		BigStatSz int64
	}
	run := func(c calls) result {
		var r result
		big := make([]byte, 3*ChunkSize+17)
		for i := range big {
			big[i] = byte(i)
		}
		if err := c.put(ctx, "a/one", []byte("first object")); err != nil {
			t.Fatal(err)
		}
		if err := c.put(ctx, "a/big", big); err != nil {
			t.Fatal(err)
		}
		var err error
		if r.Stat, err = c.stat(ctx, "a/one"); err != nil {
			t.Fatal(err)
		}
		st, err := c.stat(ctx, "a/big")
		if err != nil {
			t.Fatal(err)
		}
		r.BigStatSz = st.Size
		if err := c.copy(ctx, "a/one", "b/copy"); err != nil {
			t.Fatal(err)
		}
		if r.CopyGet, err = c.get(ctx, "b/copy"); err != nil {
			t.Fatal(err)
		}
		if r.Keys, err = c.list(ctx, ""); err != nil {
			t.Fatal(err)
		}
		_, err = c.stat(ctx, "missing")
		r.MissStat = status.Code(err)
		err = c.copy(ctx, "missing", "x")
		r.MissCopy = status.Code(err)
		if err := c.del(ctx, "b/copy"); err != nil {
			t.Fatal(err)
		}
		r.AfterDel, _ = c.exists(ctx, "b/copy")
		return r
	}
	want, got := run(direct), run(adapted)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("adapted v1 store answers\n%+v\nbut a v2 store answers\n%+v", got, want)
	}
	if want.Stat.Size != 12 || want.MissStat != codes.NotFound || want.BigStatSz != 3*ChunkSize+17 {
		t.Errorf("v2 answers look wrong: %+v", want)
	}
	if _, err := adapted.presign(ctx, "a/one"); !errors.Is(err, ErrNoCapability) {
		t.Errorf("presign through the v1 adapter: %v", err)
	}
}
