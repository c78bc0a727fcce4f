package plugin

import (
	"os"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// stdioBacklog is how many chunks of output wait for a host that has not
// opened the stdio stream yet. Past it, output is dropped rather than
// blocking the plugin's writes forever (go-plugin plugins block).
const stdioBacklog = 256

// stdioServer carries what the plugin writes to os.Stdout and os.Stderr
// after the handshake to the host, over plugin.GRPCStdio.
type stdioServer struct {
	pluginpb.UnimplementedGRPCStdioServer
	out        chan *pluginpb.StdioData
	subscribed atomic.Bool
	done       chan struct{}
	closeOnce  sync.Once
	readers    sync.WaitGroup
}

func newStdioServer() *stdioServer {
	return &stdioServer{out: make(chan *pluginpb.StdioData, stdioBacklog), done: make(chan struct{})}
}

func (s *stdioServer) pump(r *os.File, ch pluginpb.StdioData_Channel) {
	defer s.readers.Done()
	defer r.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			msg := &pluginpb.StdioData{Channel: ch, Data: append([]byte(nil), buf[:n]...)}
			if s.subscribed.Load() {
				select {
				case s.out <- msg:
				case <-s.done:
				}
			} else {
				select {
				case s.out <- msg:
				default: // nobody listening and the backlog is full
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// StreamStdio sends the plugin's output to the host until the plugin
// stops or the host goes away.
func (s *stdioServer) StreamStdio(_ *emptypb.Empty, stream grpc.ServerStreamingServer[pluginpb.StdioData]) error {
	s.subscribed.Store(true)
	for {
		select {
		case msg := <-s.out:
			if err := stream.Send(msg); err != nil {
				return err
			}
		case <-s.done:
			return nil
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (s *stdioServer) close() {
	s.closeOnce.Do(func() { close(s.done) })
}
