package host

import (
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// endedStream is a stream whose every RecvMsg answers err.
type endedStream struct {
	grpc.ClientStream
	err error
}

func (s endedStream) RecvMsg(any) error { return s.err }

// TestCallCount: a unary call counts while it runs; a stream from its
// start until RecvMsg fails (io.EOF included) or its context ends; the
// broker stream never. A count that missed a call would let Close cut it
// (wire.ShutdownIdleHeader); one that never came back to zero would only
// keep the graceful stop.
func TestCallCount(t *testing.T) {
	c := &callCount{}
	ctx := context.Background()
	err := c.unary(ctx, "/kv.KV/Get", nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		if c.idle() {
			t.Error("idle while a unary call runs")
		}
		return nil
	})
	if err != nil || !c.idle() {
		t.Fatalf("after a unary call: %v, idle %v", err, c.idle())
	}
	streamer := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
		return endedStream{err: io.EOF}, nil
	}
	s, err := c.stream(ctx, nil, nil, "/kv.KV/Watch", streamer)
	if err != nil || c.idle() {
		t.Fatalf("a stream open: %v, idle %v", err, c.idle())
	}
	s.RecvMsg(nil)
	s.RecvMsg(nil)
	if !c.idle() || c.n.Load() != 0 {
		t.Fatalf("after the stream's end: %d in flight", c.n.Load())
	}
	sctx, cancel := context.WithCancel(ctx)
	if _, err := c.stream(sctx, nil, nil, "/kv.KV/Watch", streamer); err != nil || c.idle() {
		t.Fatalf("a second stream open: %v, idle %v", err, c.idle())
	}
	cancel()
	deadline := time.Now().Add(30 * time.Second)
	for !c.idle() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !c.idle() {
		t.Fatal("a stream whose context ended is still counted")
	}
	if _, err := c.stream(ctx, nil, nil, pluginpb.GRPCBroker_StartStream_FullMethodName, streamer); err != nil || !c.idle() {
		t.Fatalf("the broker stream: %v, idle %v; want it not counted", err, c.idle())
	}
}
