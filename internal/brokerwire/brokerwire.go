package brokerwire

import (
	"crypto/tls"
	"log/slog"
	"net"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/listen"
)

// Stream is the broker stream as both gRPC stub types see it.
type Stream interface {
	Send(*pluginpb.ConnInfo) error
	Recv() (*pluginpb.ConnInfo, error)
}

// EndableStream is a Stream its reader may end from outside: the host's
// client stream, whose context End cancels. Run reads such a stream in
// its caller's goroutine, and ends it when the broker is closed or a Send
// stalls, instead of keeping a goroutine of its own to return at once.
type EndableStream interface {
	Stream
	End()
}

// Options configure a broker. The zero value serves and dials in plain
// text over unix sockets in the temporary directory (over loopback TCP on
// Windows, as go-plugin's broker does there).
type Options struct {
	// TLS secures brokered connections; nil means none.
	TLS *tls.Config
	// Unix says where brokered sockets go (unused on Windows).
	Unix listen.UnixConfig
	// ServerOptions and DialOptions are added to every brokered server
	// and connection (message size limits, interceptors).
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	// Logger receives a warning when the peer's announcements are
	// dropped; nil discards it.
	Logger *slog.Logger
	// Mux, when set, carries brokered connections over the plugin's one
	// connection (go-plugin's GRPCBrokerMultiplex) instead of new sockets.
	// It must come from ListenMux or DialMux. The broker does not close it.
	Mux Mux
}

// Mux is one end of a plugin connection that carries the main gRPC
// connection and every brokered one over a single socket, as go-plugin
// does when its host sets GRPCBrokerMultiplex (PLUGIN_MULTIPLEX_GRPC=true).
// The host's end comes from DialMux, the plugin's from ListenMux; package
// broker documents the protocol.
type Mux interface {
	// Main is the listener of the plugin's main gRPC server: it accepts
	// the streams the host opens without a knock. It is nil on the host's
	// side. Closing it does not end the session; Close does.
	Main() net.Listener
	// Open opens a new stream to the peer: the host's gRPC dialer uses it
	// for the main connection.
	Open() (net.Conn, error)
	// Close ends the session and every stream in it.
	Close() error
	// Done is closed when the session has ended.
	Done() <-chan struct{}
}

// Wire is what the owner of a broker does with it beyond its public
// methods.
type Wire interface {
	// Run reads the peer's announcements and knocks from s and answers
	// the knocks, until the stream ends (its error is returned), the
	// broker is closed (nil), or the peer stops reading (broker.ErrStalled,
	// and the broker is closed). Only the first stream attaches. The
	// caller ends s once Run returns (a Recv or Send may still block).
	Run(s Stream) error
	// Handler serves the broker stream on the plugin's side: it runs the
	// broker on the host's stream and returns when the stream ends or
	// the broker is closed.
	Handler() pluginpb.GRPCBrokerServer
}

// Hooks are the constructors package broker hands this package.
type Hooks struct {
	// New returns a *broker.Broker with no stream yet, and its Wire.
	New func(Options) (any, Wire)
	// ListenMux and DialMux make the two ends of a multiplexed
	// connection (see the functions of the same names).
	ListenMux func(net.Listener) Mux
	DialMux   func(net.Conn) (Mux, error)
}

var hooks Hooks

// Install is called by package broker's init.
func Install(h Hooks) { hooks = h }

func installed() Hooks {
	if hooks.New == nil {
		panic("brokerwire: package broker is not linked into this program: import github.com/plugkit/plugkit/broker")
	}
	return hooks
}

// New returns a broker with no stream yet, as a B (which must be
// *broker.Broker), and the Wire that runs it.
func New[B any](opts Options) (B, Wire) {
	b, w := installed().New(opts)
	return b.(B), w
}

// ListenMux is the plugin's side of a multiplexed connection: it takes the
// first connection on ln (the host's), makes it a yamux session, and
// routes the host's streams. ln takes no further connections: it is closed
// once the host is connected, which removes a unix socket's file. The
// plugin's gRPC server serves on Main. If the host does not connect within
// 30 s, Main's Accept fails.
func ListenMux(ln net.Listener) Mux { return installed().ListenMux(ln) }

// DialMux is the host's side of a multiplexed connection: conn is its one
// connection to the plugin's socket. Open makes the main gRPC connection's
// streams.
func DialMux(conn net.Conn) (Mux, error) { return installed().DialMux(conn) }
