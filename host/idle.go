package host

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// callCount counts the calls in flight on a launched plugin's connection,
// with a unary and a stream interceptor (two atomic adds a call, no
// allocation for a unary one): what a graceful stop of the plugin would
// wait for. The broker and stdio streams, which live as long as the
// connection, and the Shutdown call are not counted. Close tells a plugin
// whose count is zero that it may stop at once (wire.ShutdownIdleHeader).
type callCount struct{ n atomic.Int64 }

// counted reports whether calls to method are counted.
func counted(method string) bool {
	switch method {
	case pluginpb.GRPCBroker_StartStream_FullMethodName, pluginpb.GRPCStdio_StreamStdio_FullMethodName, pluginpb.GRPCController_Shutdown_FullMethodName:
		return false
	}
	return true
}

// dialOptions are the interceptors that count.
func (c *callCount) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(c.unary), grpc.WithChainStreamInterceptor(c.stream)}
}

// unary counts a unary call while it runs.
func (c *callCount) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !counted(method) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c.n.Add(1)
	defer c.n.Add(-1)
	return invoker(ctx, method, req, reply, cc, opts...)
}

// stream counts a stream until it ends as gRPC ends one: RecvMsg returns
// an error (io.EOF after the last message included), or its context ends.
func (c *callCount) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if !counted(method) {
		return streamer(ctx, desc, cc, method, opts...)
	}
	c.n.Add(1)
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		c.n.Add(-1)
		return nil, err
	}
	cs := &countedStream{ClientStream: s, c: c}
	cs.stop = context.AfterFunc(ctx, cs.end)
	return cs, nil
}

// countedStream is a counted stream: it counts itself out once, at its
// end.
type countedStream struct {
	grpc.ClientStream
	c    *callCount
	once sync.Once
	stop func() bool
}

// RecvMsg receives as the stream does; an error ends the stream.
func (s *countedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.end()
		s.stop()
	}
	return err
}

// end counts the stream out, once: at its last RecvMsg, or when its
// context ends.
func (s *countedStream) end() { s.once.Do(func() { s.c.n.Add(-1) }) }

// idle reports whether no counted call is in flight.
func (c *callCount) idle() bool { return c.n.Load() == 0 }
