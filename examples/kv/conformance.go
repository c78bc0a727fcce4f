package kv

import (
	"context"
	"fmt"

	kvv1 "example.com/kv/gen/kv/v1"
	kvv2 "example.com/kv/gen/kv/v2"
	"github.com/plugkit/plugkit/conformance"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Adapters are what a kv host passes to kvv2.Open, to use v1 plugins too.
var Adapters = kvv2.Adapters{V1: func(f kvv2.V1Forward) kvv2.KVClient { return v1Adapter{f} }}

// v1Adapter presents a kv v1 plugin as v2: V1Forward forwards Get, refuses
// Delete and List; Put changed (ttl_seconds), so it is written here.
type v1Adapter struct{ kvv2.V1Forward }

func (a v1Adapter) Put(ctx context.Context, in *kvv2.PutRequest, opts ...grpc.CallOption) (*kvv2.PutResponse, error) {
	if in.GetTtlSeconds() > 0 {
		return nil, a.Unimplemented("kv v1 has no ttl_seconds (kv 2.1)")
	}
	return a.PutV1(ctx, &kvv1.PutRequest{Key: in.GetKey(), Value: in.GetValue()}, opts...)
}

// SuiteV1 is the conformance suite of kv v1.
func SuiteV1() conformance.Suite[*kvv1.Client] {
	return conformance.Suite[*kvv1.Client]{Kind: kvv1.Kind, Major: 1, Cases: []conformance.Case[*kvv1.Client]{{
		Name: "put then get returns the value; a missing key is NotFound", Run: func(ctx context.Context, c *kvv1.Client) error {
			k := conformance.RunID(ctx)
			_, err := c.Put(ctx, &kvv1.PutRequest{Key: k, Value: []byte("1")})
			resp, err2 := c.Get(ctx, &kvv1.GetRequest{Key: k})
			_, missing := c.Get(ctx, &kvv1.GetRequest{Key: k + "/missing"})
			return check(err == nil && err2 == nil && string(resp.GetValue()) == "1" && status.Code(missing) == codes.NotFound,
				"put: %v; get: %v, %v; get of a missing key: %v", err, resp, err2, missing)
		}},
	}}
}

// SuiteV2 is the conformance suite of kv v2, adapted v1 plugins included.
func SuiteV2() conformance.Suite[*kvv2.Client] {
	return conformance.Suite[*kvv2.Client]{Kind: kvv2.Kind, Major: 2, Cases: []conformance.Case[*kvv2.Client]{{
		Name: "put with ttl_seconds then get returns the value", Run: func(ctx context.Context, c *kvv2.Client) error {
			_, err := c.Put(ctx, &kvv2.PutRequest{Key: conformance.RunID(ctx), Value: []byte("1"), TtlSeconds: 3600})
			if !c.Info().Has(kvv2.CapTtl) {
				return check(status.Code(err) == codes.Unimplemented, "put with ttl_seconds, without %q: %v", kvv2.CapTtl, err)
			}
			resp, err2 := c.Get(ctx, &kvv2.GetRequest{Key: conformance.RunID(ctx)})
			return check(err == nil && err2 == nil && string(resp.GetValue()) == "1", "put: %v; get: %v, %v", err, resp, err2)
		}}, {
		Name: "delete removes a key, list streams the others of a prefix", Run: func(ctx context.Context, c *kvv2.Client) error {
			p := conformance.RunID(ctx) + "/"
			_, err := c.Put(ctx, &kvv2.PutRequest{Key: p + "a"})
			_, err2 := c.Put(ctx, &kvv2.PutRequest{Key: p + "b"})
			_, err3 := c.Delete(ctx, &kvv2.DeleteRequest{Key: p + "b"})
			if c.Info().Major == 1 {
				return check(err == nil && err2 == nil && status.Code(err3) == codes.Unimplemented, "put: %v, %v; delete through the v1 adapter: %v", err, err2, err3)
			}
			keys, err4 := c.ListAll(ctx, &kvv2.ListRequest{Prefix: p})
			return check(err == nil && err2 == nil && err3 == nil && err4 == nil && len(keys) == 1 && keys[0].GetKey() == p+"a",
				"put: %v, %v; delete: %v; list: %v, %v", err, err2, err3, keys, err4)
		}},
	}}
}

func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
