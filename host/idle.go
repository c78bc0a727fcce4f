package host

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// callCount counts the calls in flight on a launched plugin's connection,
// as a gRPC stats handler (each call's Begin and End): what a graceful
// stop of the plugin would wait for. The broker and stdio streams, which
// live as long as the connection, and the Shutdown call are not counted.
// Close tells a plugin whose count is zero that it may stop at once
// (wire.ShutdownIdleHeader).
type callCount struct{ n atomic.Int64 }

// uncounted marks the context of a call callCount leaves out.
type uncounted struct{}

// TagRPC marks the calls that are not counted.
func (*callCount) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	switch info.FullMethodName {
	case pluginpb.GRPCBroker_StartStream_FullMethodName, pluginpb.GRPCStdio_StreamStdio_FullMethodName, pluginpb.GRPCController_Shutdown_FullMethodName:
		return context.WithValue(ctx, uncounted{}, true)
	}
	return ctx
}

// HandleRPC counts a call in at its Begin and out at its End, which gRPC
// reports once for every call that began, however it ends.
func (c *callCount) HandleRPC(ctx context.Context, s stats.RPCStats) {
	var d int64
	switch s.(type) {
	case *stats.Begin:
		d = 1
	case *stats.End:
		d = -1
	default:
		return
	}
	if ctx.Value(uncounted{}) == nil {
		c.n.Add(d)
	}
}

// TagConn leaves ctx as it is: connections are not counted.
func (*callCount) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn does nothing: connections are not counted.
func (*callCount) HandleConn(context.Context, stats.ConnStats) {}

// idle reports whether no counted call is in flight.
func (c *callCount) idle() bool { return c.n.Load() == 0 }
