package manager

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// exitWait bounds how long a call whose connection broke waits for its
// plugin's process to be seen exiting, to say that the plugin crashed. A
// call the plugin answered, whatever its status, never waits: only a
// call that ended without the plugin's answer (its trailers) does.
const exitWait = time.Second

// answer records whether the plugin answered one call: its trailers, with
// the status it chose, arrived. A call that fails without them failed
// because the connection broke (the plugin may have crashed).
type answer struct{ got atomic.Bool }

type answerKey struct{}

// withAnswer returns ctx carrying a fresh answer, which answerWatch sets
// when the call made with ctx gets the plugin's trailers.
func withAnswer(ctx context.Context) (context.Context, *answer) {
	a := new(answer)
	return context.WithValue(ctx, answerKey{}, a), a
}

// answered reports whether the plugin answered the call made with a (nil:
// not known, taken as not answered).
func (a *answer) answered() bool { return a != nil && a.got.Load() }

// answerWatch is the gRPC stats handler that marks a call answered when
// the plugin's trailers arrive (before gRPC hands the call's status to
// the caller).
type answerWatch struct{}

// answerDialOption adds answerWatch to a plugin's connection.
var answerDialOption = grpc.WithStatsHandler(answerWatch{})

func (answerWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (answerWatch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); !ok {
		return
	}
	if a, ok := ctx.Value(answerKey{}).(*answer); ok {
		a.got.Store(true)
	}
}

func (answerWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (answerWatch) HandleConn(context.Context, stats.ConnStats) {}
