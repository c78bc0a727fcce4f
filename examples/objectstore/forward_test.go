package objectstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1/objectstorev1plugin"
	objectstorev2 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2"
	"github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v2/objectstorev2plugin"
	"github.com/plugkit/plugkit/plugintest"
)

// TestGeneratedForwardingToV1 uses a v1 object store through the
// generated objectstorev2.V1Forward alone: every v1 RPC is unchanged in v2,
// so it forwards them all, streams included (Put from the client, Get from
// the server), and refuses what v1 lacks (Stat) without a call.
func TestGeneratedForwardingToV1(t *testing.T) {
	cat, err := catalog.New("1.0.0", objectstorev1plugin.Implement("example.com/memory", backend.V1{B: backend.NewMemory()}))
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := objectstorev2.Open(ctx, m, "example.com/memory", objectstorev2.Adapters{
		V1: func(f objectstorev2.V1Forward) objectstorev2.ObjectStoreClient { return f },
	})
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Major != 1 || !info.Adapted {
		t.Fatalf("info %+v: want major 1 through the adapter", info)
	}
	if _, err := s.Init(ctx, &objectstorev2.InitRequest{}); err != nil {
		t.Fatalf("Init: %v", err)
	}
	put, err := s.Put(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []*objectstorev2.PutRequest{
		{Part: &objectstorev2.PutRequest_Key{Key: "k"}}, {Part: &objectstorev2.PutRequest_Chunk{Chunk: []byte("ab")}}, {Part: &objectstorev2.PutRequest_Chunk{Chunk: []byte("c")}},
	} {
		if err := put.Send(part); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := put.CloseAndRecv(); err != nil || resp.GetSize() != 3 {
		t.Fatalf("Put = %v, %v; want size 3", resp, err)
	}
	chunks, err := s.GetAll(ctx, &objectstorev2.GetRequest{Key: "k"})
	got := ""
	for _, c := range chunks {
		got += string(c.GetChunk())
	}
	if err != nil || got != "abc" {
		t.Errorf("Get = %q, %v; want abc", got, err)
	}
	if list, err := s.List(ctx, &objectstorev2.ListRequest{}); err != nil || len(list.GetKeys()) != 1 || list.GetKeys()[0] != "k" {
		t.Errorf("List = %v, %v; want [k]", list, err)
	}
	if _, err := s.Stat(ctx, &objectstorev2.StatRequest{Key: "k"}); status.Code(err) != codes.Unimplemented {
		t.Errorf("Stat through V1Forward: %v, want Unimplemented", err)
	}
}

// TestGeneratedV1FromV2Server serves objectstore v1 from a v2 server
// through the generated objectstorev2plugin.V1: the unary RPCs and the
// server stream of Get reach the v2 server; Put, a client stream, is left
// to the plugin: catalog.New refuses it unset, and a plugin that refuses
// Put says so with a function that answers Unimplemented.
func TestGeneratedV1FromV2Server(t *testing.T) {
	b := backend.NewMemory()
	if err := b.Put("k", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	v1 := objectstorev2plugin.V1(backend.V2{B: b})
	if _, err := catalog.New("2.0.0", objectstorev1plugin.Implement("example.com/v1", v1.Server())); err == nil || !strings.Contains(err.Error(), "Put") {
		t.Fatalf("catalog.New with Put unset: %v; want an error naming Put", err)
	}
	v1.Put = func(grpc.ClientStreamingServer[objectstorev1.PutRequest, objectstorev1.PutResponse]) error {
		return status.Error(codes.Unimplemented, "this plugin stores through v2 only")
	}
	cat, err := catalog.New("2.0.0", objectstorev1plugin.Implement("example.com/v1", v1.Server()))
	if err != nil {
		t.Fatal(err)
	}
	m := plugintest.ServeCatalog(t, cat)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := objectstorev1.Open(ctx, m, "example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := s.Exists(ctx, &objectstorev1.ExistsRequest{Key: "k"}); err != nil || !resp.GetExists() {
		t.Errorf("Exists = %v, %v; want true", resp, err)
	}
	chunks, err := s.GetAll(ctx, &objectstorev1.GetRequest{Key: "k"})
	if err != nil || len(chunks) == 0 || string(chunks[0].GetChunk()) != "abc" {
		t.Errorf("Get = %v, %v; want abc", chunks, err)
	}
	if _, err := s.GetAll(ctx, &objectstorev1.GetRequest{Key: "missing"}); status.Code(err) != codes.NotFound {
		t.Errorf("Get of a missing key: %v, want NotFound from the v2 server", err)
	}
	put, err := s.Put(ctx)
	if err == nil {
		_, err = put.CloseAndRecv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("Put, refused by the plugin: %v, want Unimplemented", err)
	}
}
