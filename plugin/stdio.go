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

// capture points os.Stdout and os.Stderr at pipes read by the server. The
// returned function puts them back.
func (s *stdioServer) capture() (restore func(), err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	s.readers.Add(2)
	go s.pump(outR, pluginpb.StdioData_STDOUT)
	go s.pump(errR, pluginpb.StdioData_STDERR)
	return func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		outW.Close()
		errW.Close()
		s.readers.Wait()
	}, nil
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
