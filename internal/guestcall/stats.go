package guestcall

import (
	"context"
	"reflect"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// connStats is what a call that skips HTTP/2 takes from its
// *grpc.ClientConn: its stats handlers, told of each call's begin, the
// guest's trailer and the end (a manager learns from the trailer that the
// plugin answered a failed call), and whether the connection has per-call
// credentials of its own, which such a call cannot send (it then goes over
// HTTP/2).
type connStats struct {
	once     sync.Once
	handlers []stats.Handler
	ok       bool // the fields were found and no credentials are set
}

func (c *connStats) read(cc *grpc.ClientConn) ([]stats.Handler, bool) {
	c.once.Do(func() {
		defer func() {
			if recover() != nil {
				c.handlers, c.ok = nil, false
			}
		}()
		if cc == nil {
			c.ok = true
			return
		}
		copts := field(field(reflect.ValueOf(cc).Elem(), "dopts"), "copts")
		if field(copts, "PerRPCCredentials").Len() > 0 {
			return
		}
		c.handlers, _ = field(copts, "StatsHandlers").Interface().([]stats.Handler)
		c.ok = true
	})
	return c.handlers, c.ok
}

// callStats reports one call to the connection's stats handlers.
type callStats struct {
	hs    []stats.Handler
	ctx   context.Context
	begin time.Time
}

// beginStats tags the call and reports its begin; ctx is the call's
// context from then on.
func beginStats(ctx context.Context, hs []stats.Handler, method string, desc *grpc.StreamDesc) (context.Context, *callStats) {
	if len(hs) == 0 {
		return ctx, nil
	}
	for _, h := range hs {
		ctx = h.TagRPC(ctx, &stats.RPCTagInfo{FullMethodName: method, FailFast: true})
	}
	cs := &callStats{hs: hs, ctx: ctx, begin: time.Now()}
	b := &stats.Begin{Client: true, BeginTime: cs.begin, FailFast: true, IsClientStream: desc.ClientStreams, IsServerStream: desc.ServerStreams}
	for _, h := range hs {
		h.HandleRPC(ctx, b)
	}
	return ctx, cs
}

// trailer reports the guest's trailer.
func (cs *callStats) trailer(md metadata.MD) {
	if cs == nil {
		return
	}
	t := &stats.InTrailer{Client: true, Trailer: md}
	for _, h := range cs.hs {
		h.HandleRPC(cs.ctx, t)
	}
}

// end reports the call's end, err nil when it succeeded.
func (cs *callStats) end(err error, trailer metadata.MD) {
	if cs == nil {
		return
	}
	e := &stats.End{Client: true, BeginTime: cs.begin, EndTime: time.Now(), Trailer: trailer, Error: err}
	for _, h := range cs.hs {
		h.HandleRPC(cs.ctx, e)
	}
}
