package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/internal/hostwire"
	"github.com/plugkit/plugkit/wire"
)

// Conn is a connection to one named implementation in a shared plugin
// process. It is a grpc.ClientConnInterface, so generated stubs take it:
// every call names the implementation in its metadata, and goes to the
// current process, started or restarted as needed.
type Conn struct {
	p    *process
	name string
	// kind and major are what the plugin's Describe answer claimed for
	// name, which Dispense chose; major is nil for a Conn made otherwise.
	kind  string
	major *catalogv1.Major

	mu      sync.Mutex
	gen     int // the process generation the hooks last ran for
	prevGen int // gen before an upgrade moved it, for a rollback
	hooks   []func(ctx context.Context, cc grpc.ClientConnInterface) error
	closed  bool
}

// OnRestart adds a hook that runs, before anything else is sent, on every
// new process after the first: it re-initialises the plugin's state for
// this client (an object store replays its Init configuration). That is a
// restart, the new release of an upgrade (Manager.Upgrade runs the hooks
// before any call moves to it, and refuses the release if one fails), and
// the old release after a rollback for a Conn whose first calls went to
// the new one. If a hook fails on a restart, the call that
// triggered it fails with the hook's error and the hooks run again on the
// next call.
func (c *Conn) OnRestart(hook func(ctx context.Context, cc grpc.ClientConnInterface) error) {
	c.mu.Lock()
	c.hooks = append(c.hooks, hook)
	c.mu.Unlock()
}

// Close detaches the Conn; the shared process keeps running for other
// Conns until the Manager is closed. Calls on a closed Conn fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.p.connsMu.Lock()
	delete(c.p.conns, c)
	c.p.connsMu.Unlock()
	return nil
}

// ready returns the live instance, with ref held on it, running the
// restart hooks first when the process is new.
func (c *Conn) ready(ctx context.Context, ref *callRef) (*instance, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: %w", c.name, ErrClosed)
	}
	in, err := c.p.get(ctx, ref)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == in.gen {
		return in, nil
	}
	if c.gen != 0 {
		if err := c.runHooks(ctx, in); err != nil {
			in.done(ref)
			return nil, fmt.Errorf("re-initialising %s after its plugin restarted: %w", c.name, err)
		}
	}
	c.gen = in.gen
	return in, nil
}

// runHooks runs the restart hooks on in. c.mu is held.
func (c *Conn) runHooks(ctx context.Context, in *instance) error {
	direct := named{cc: in.client.Conn(), name: c.name}
	for _, hook := range c.hooks {
		if err := hook(ctx, direct); err != nil {
			return err
		}
	}
	return nil
}

// Invoke performs a unary call. A ctx without a deadline gets the
// manager's (Config.Calls).
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	ctx, cancel, d := c.callContext(ctx)
	defer cancel()
	// The call's own context, which an upgrade's drain deadline ends.
	ctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	ref := &callRef{cancel: cut}
	in, err := c.ready(ctx, ref)
	if err != nil {
		return c.deadlineSpent(ctx, d, method, err)
	}
	defer in.done(ref)
	callCtx, ans := withAnswer(c.metered(ctx, in))
	err = named{cc: in.client.Conn(), name: c.name}.Invoke(callCtx, method, args, reply, opts...)
	if ctx.Err() == nil {
		in.verdict().record(err, ans.answered())
	}
	err = c.p.observe(ctx, in, method, err, ans)
	c.p.brokeOnProbation(ctx, in, err, ans)
	return c.deadlineSpent(ctx, d, method, c.explain(in, method, upgradedStatus(ctx, err)))
}

// NewStream opens a stream. A ctx without a deadline gets the manager's
// (Config.Calls), for the stream's whole life.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	caller := ctx
	ctx, cancel, d := c.callContext(ctx)
	// The stream's own context, which an upgrade's drain deadline ends.
	ctx, cut := context.WithCancelCause(ctx)
	ref := &callRef{cancel: cut}
	in, err := c.ready(ctx, ref)
	if err != nil {
		cut(nil)
		cancel()
		return nil, c.deadlineSpent(ctx, d, method, err)
	}
	callCtx, ans := withAnswer(c.metered(ctx, in))
	s, err := named{cc: in.client.Conn(), name: c.name}.NewStream(callCtx, desc, method, opts...)
	if err != nil {
		if ctx.Err() == nil {
			in.verdict().record(err, ans.answered())
		}
		err = c.p.observe(ctx, in, method, err, ans)
		c.p.brokeOnProbation(ctx, in, err, ans)
		err = c.explain(in, method, upgradedStatus(ctx, err))
		in.done(ref)
		cut(nil)
		cancel()
		return nil, c.deadlineSpent(ctx, d, method, err)
	}
	// gRPC ends the stream's context when the stream ends: the stream
	// leaves its instance (which may be draining), and the deadline's
	// timer goes.
	context.AfterFunc(s.Context(), func() {
		in.done(ref)
		cut(nil)
		cancel()
	})
	return &observedStream{ClientStream: s, caller: caller, ctx: ctx, conn: c, in: in, method: method, ans: ans}, nil
}

// callContext gives ctx the deadline of Config.Calls for this Conn's kind
// when it has none, and returns that deadline (0 when it added none).
func (c *Conn) callContext(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}, 0
	}
	d := c.p.m.cfg.Calls.deadline(c.kind)
	if d <= 0 {
		return ctx, func() {}, 0
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, cancel, d
}

// deadlineSpent says, when the deadline the manager added (d) ran out,
// that it did and how to change it; the gRPC status stays in the chain.
func (c *Conn) deadlineSpent(ctx context.Context, d time.Duration, method string, err error) error {
	if err == nil || d == 0 || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s on %s %q: the manager's deadline of %v for calls that bring none (Config.Calls) ran out: give the call a context with a deadline of its own, or change Config.Calls.Deadline or Config.Calls.Kinds[%q]: %w",
		method, c.kind, c.name, d, c.kind, err)
}

// explain turns the plugin's "unknown service" answer into what it means:
// its Describe answer claimed a kind and major for this name that it does
// not serve. The gRPC status (Unimplemented) stays in the chain.
func (c *Conn) explain(in *instance, method string, err error) error {
	if c.major == nil || status.Code(err) != codes.Unimplemented || !strings.HasPrefix(status.Convert(err).Message(), "unknown service") {
		return err
	}
	service, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return fmt.Errorf("plugin %s said in its Describe answer that it serves %s %q at major %d.%d (service %s), but it does not serve %s: its Describe answer is wrong; fix or replace the plugin: %w",
		in.path, c.kind, c.name, c.major.GetMajor(), c.major.GetMinor(), c.major.GetService(), service, err)
}

// named adds the implementation's name to every call on cc.
type named struct {
	cc   grpc.ClientConnInterface
	name string
}

func (n named) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return n.cc.Invoke(metadata.AppendToOutgoingContext(ctx, wire.NameKey, n.name), method, args, reply, opts...)
}

func (n named) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return n.cc.NewStream(metadata.AppendToOutgoingContext(ctx, wire.NameKey, n.name), desc, method, opts...)
}

// metered adds the Conn's kind, name and plugin version to the metrics
// of a call made with ctx, when the manager has a MeterProvider.
func (c *Conn) metered(ctx context.Context, in *instance) context.Context {
	if c.p.m.cfg.Telemetry.MeterProvider == nil {
		return ctx
	}
	attrs := []attribute.KeyValue{attribute.String("plugkit.kind", c.kind), attribute.String("plugkit.name", c.name)}
	if v := in.version(); v != "" {
		// A process Discover kept (Finder.KeepDescribed) was started
		// before the version was known.
		attrs = append(attrs, versionAttribute(v))
	}
	return hostwire.WithCallAttributes(ctx, attrs...)
}

// observedStream reports a crash seen while receiving.
type observedStream struct {
	grpc.ClientStream
	// caller is the caller's context: whether it ended tells a stream
	// the caller gave up on from one that broke. ctx is the stream's own,
	// which the stream's end cancels (and an upgrade's drain deadline,
	// with its cause).
	caller context.Context
	ctx    context.Context
	conn   *Conn
	in     *instance // the instance it runs on
	method string
	ans    *answer // whether the plugin answered the stream
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		if s.in != nil {
			s.in.verdict().record(nil, true)
		}
		return err
	}
	if _, ok := context.Cause(s.ctx).(*upgradedError); ok {
		// Ended at an upgrade's drain deadline: not the plugin's failure.
		return upgradedStatus(s.ctx, err)
	}
	if s.caller.Err() == nil {
		s.in.verdict().record(err, s.ans.answered())
	}
	err = s.conn.p.observe(s.caller, s.in, s.method, err, s.ans)
	s.conn.p.brokeOnProbation(s.caller, s.in, err, s.ans)
	return s.conn.explain(s.in, s.method, err)
}

// Pid is the process ID of the plugin process serving the Conn now, or 0
// when none is running.
func (c *Conn) Pid() int {
	if err := c.p.acquire(context.Background()); err != nil {
		return 0
	}
	defer c.p.release()
	if c.p.cur == nil {
		return 0
	}
	select {
	case <-c.p.cur.client.Exited():
		return 0
	default:
		return c.p.cur.client.Pid()
	}
}
