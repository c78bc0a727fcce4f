//go:build !wasip1

package plugin

import (
	"io"
	"net"
	"os"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/handshake"
	"github.com/plugkit/plugkit/internal/listen"
)

// openListener opens the socket a plugin process serves its host on: TCP
// when the host asks for it, else a unix socket (serve_wasip1.go has a
// WebAssembly guest's).
func openListener(env handshake.Env) (net.Listener, error) {
	if listen.Network(env.Network) == "tcp" {
		return listen.TCP(env.MinPort, env.MaxPort)
	}
	return listen.Unix(listen.UnixConfig{Dir: env.UnixSocketDir, Group: env.UnixSocketGroup})
}

// platformServerOptions are the gRPC server options a plugin process
// adds to its own: none (serve_wasip1.go has a guest's).
func platformServerOptions() []grpc.ServerOption { return nil }

// splitCalls is a guest's alone: a native plugin serves HTTP/2 only.
func (p *hosted) splitCalls(ln net.Listener) (net.Listener, string) { return ln, "" }

// handshakeOut is where the handshake line goes: standard output.
func handshakeOut() io.Writer { return os.Stdout }
