package catalog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/wire"
)

func twoStores(t *testing.T) (*catalog.Catalog, *backend.Memory, *backend.Memory) {
	t.Helper()
	a, b := backend.NewMemory(), backend.NewMemory()
	cat, err := catalog.New("1.2.3",
		catalog.Implement[objectstorev2.ObjectStoreServer]("objectstore", 2, 1, "a", &objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: a}, "presign", "zeta"),
		catalog.Implement[objectstorev2.ObjectStoreServer]("objectstore", 2, 3, "b", &objectstorev2.ObjectStore_ServiceDesc, backend.V2{B: b}, "presign"),
		catalog.Implement[objectstorev1.ObjectStoreServer]("objectstore", 1, 0, "a", &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: a}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cat, a, b
}

func TestDescribe(t *testing.T) {
	cat, _, _ := twoStores(t)
	got, _ := protojson.Marshal(cat.Describe())
	want := `{"pluginVersion":"1.2.3","sdkVersion":"` + catalog.SDKVersion + `","kinds":[{"name":"objectstore","majors":[` +
		`{"major":2,"minor":1,"service":"objectstore.v2.ObjectStore","capabilities":["presign"],"names":["a","b"]},` +
		`{"major":1,"service":"objectstore.v1.ObjectStore","names":["a"]}]}]}`
	if strings.ReplaceAll(string(got), " ", "") != want {
		t.Errorf("Describe =\n%s\nwant\n%s", got, want)
	}
}

func TestNewRejects(t *testing.T) {
	store := backend.V2{B: backend.NewMemory()}
	desc := &objectstorev2.ObjectStore_ServiceDesc
	tests := []struct {
		impls []catalog.Implementation
		want  string
	}{
		{nil, "no implementations"},
		{[]catalog.Implementation{catalog.Implement[objectstorev2.ObjectStoreServer]("", 2, 0, "a", desc, store)}, "kind"},
		{[]catalog.Implementation{catalog.Implement[objectstorev2.ObjectStoreServer]("k", 2, 0, "", desc, store)}, "name is empty"},
		{[]catalog.Implementation{catalog.Implement[any]("k", 2, 0, "a", desc, "not a server")}, "does not implement"},
		{[]catalog.Implementation{
			catalog.Implement[objectstorev2.ObjectStoreServer]("k", 2, 0, "a", desc, store),
			catalog.Implement[objectstorev2.ObjectStoreServer]("k", 2, 0, "a", desc, store)}, "declared twice"},
		{[]catalog.Implementation{
			catalog.Implement[objectstorev2.ObjectStoreServer]("k", 2, 0, "a", desc, store),
			catalog.Implement[objectstorev1.ObjectStoreServer]("k", 2, 0, "b", &objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: backend.NewMemory()})}, "another implementation of the same major"},
	}
	for _, tt := range tests {
		if _, err := catalog.New("1.0.0", tt.impls...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New: %v, want an error mentioning %q", err, tt.want)
		}
	}
}

func TestRoutingByName(t *testing.T) {
	cat, a, b := twoStores(t)
	a.Put("only-in-a", []byte("x"))
	b.Put("only-in-b", []byte("y"))
	srv := grpc.NewServer()
	cat.Register(srv, nil)
	ln, target := testutil.LocalListener(t)
	go srv.Serve(ln)
	defer srv.Stop()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v2 := objectstorev2.NewObjectStoreClient(conn)
	exists := func(name, key string) (bool, error) {
		ctx := metadata.AppendToOutgoingContext(ctx, wire.NameKey, name)
		r, err := v2.Exists(ctx, &objectstorev2.ExistsRequest{Key: key})
		return r.GetExists(), err
	}
	if ok, err := exists("a", "only-in-a"); !ok || err != nil {
		t.Errorf("a: %v %v", ok, err)
	}
	if ok, err := exists("b", "only-in-a"); ok || err != nil {
		t.Errorf("b sees a's object: %v %v", ok, err)
	}
	if _, err := exists("c", "k"); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := v2.Exists(ctx, &objectstorev2.ExistsRequest{Key: "k"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no name with two implementations: %v", err)
	}
	// Streams are routed too.
	stream, err := v2.Get(metadata.AppendToOutgoingContext(ctx, wire.NameKey, "b"), &objectstorev2.GetRequest{Key: "only-in-b"})
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := stream.Recv(); err != nil || string(msg.GetChunk()) != "y" {
		t.Errorf("routed stream: %v %v", msg, err)
	}
	// A major with one implementation needs no name.
	if r, err := objectstorev1.NewObjectStoreClient(conn).Exists(ctx, &objectstorev1.ExistsRequest{Key: "only-in-a"}); err != nil || !r.GetExists() {
		t.Errorf("v1 without a name: %v %v", r, err)
	}
	d, err := catalogv1.NewCatalogClient(conn).Describe(ctx, &catalogv1.DescribeRequest{})
	if err != nil || d.GetPluginVersion() != "1.2.3" {
		t.Errorf("Describe over gRPC: %v %v", d, err)
	}
}
