package manager

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/host"
)

// Conn is a connection to one named implementation in a shared plugin
// process. It is a grpc.ClientConnInterface, so generated stubs take it:
// every call names the implementation in its metadata, and goes to the
// current process, started or restarted as needed.
type Conn struct {
	p    *process
	name string

	mu     sync.Mutex
	gen    int // the process generation the hooks last ran for
	hooks  []func(ctx context.Context, cc grpc.ClientConnInterface) error
	closed bool
}

// OnRestart adds a hook that runs, before anything else is sent, on every
// new process after the first: it re-initialises the plugin's state for
// this client (an object store replays its Init configuration). If a hook
// fails, the call that triggered it fails with the hook's error and the
// hooks run again on the next call.
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
	return nil
}

// ready returns the live client, running the restart hooks first when the
// process is new.
func (c *Conn) ready(ctx context.Context) (*host.Client, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: %w", c.name, ErrClosed)
	}
	cl, gen, err := c.p.get(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		return cl, nil
	}
	if c.gen != 0 {
		direct := named{cc: cl.Conn(), name: c.name}
		for _, hook := range c.hooks {
			if err := hook(ctx, direct); err != nil {
				return nil, fmt.Errorf("re-initialising %s after its plugin restarted: %w", c.name, err)
			}
		}
	}
	c.gen = gen
	return cl, nil
}

// Invoke performs a unary call.
func (c *Conn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	cl, err := c.ready(ctx)
	if err != nil {
		return err
	}
	err = named{cc: cl.Conn(), name: c.name}.Invoke(ctx, method, args, reply, opts...)
	return c.p.observe(ctx, cl, method, err)
}

// NewStream opens a stream.
func (c *Conn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cl, err := c.ready(ctx)
	if err != nil {
		return nil, err
	}
	s, err := named{cc: cl.Conn(), name: c.name}.NewStream(ctx, desc, method, opts...)
	if err != nil {
		return nil, c.p.observe(ctx, cl, method, err)
	}
	return &observedStream{ClientStream: s, ctx: ctx, p: c.p, c: cl, method: method}, nil
}

// named adds the implementation's name to every call on cc.
type named struct {
	cc   grpc.ClientConnInterface
	name string
}

func (n named) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return n.cc.Invoke(metadata.AppendToOutgoingContext(ctx, catalog.NameKey, n.name), method, args, reply, opts...)
}

func (n named) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return n.cc.NewStream(metadata.AppendToOutgoingContext(ctx, catalog.NameKey, n.name), desc, method, opts...)
}

// observedStream reports a crash seen while receiving.
type observedStream struct {
	grpc.ClientStream
	ctx    context.Context
	p      *process
	c      *host.Client
	method string
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || err.Error() == "EOF" {
		return err
	}
	return s.p.observe(s.ctx, s.c, s.method, err)
}

// Pid is the process ID of the plugin process serving the Conn now, or 0
// when none is running.
func (c *Conn) Pid() int {
	if err := c.p.acquire(context.Background()); err != nil {
		return 0
	}
	defer c.p.release()
	if c.p.client == nil {
		return 0
	}
	select {
	case <-c.p.client.Exited():
		return 0
	default:
		return c.p.client.Pid()
	}
}
