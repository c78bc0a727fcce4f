package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
	"github.com/plugkit/plugkit/internal/listen"
	"github.com/plugkit/plugkit/internal/testutil"
)

// knockFlood is a hostile plugin's broker service: on the host's broker
// stream it sends n knocks, each for a service nobody serves, and never
// reads what the host answers. With answers, it sends consents to knocks
// the host never sent instead.
type knockFlood struct {
	pluginpb.UnimplementedGRPCBrokerServer
	n       int
	answers bool
	sent    chan error
	ended   chan struct{} // closed when the stream has ended, if not nil
}

func (f knockFlood) StartStream(s grpc.BidiStreamingServer[pluginpb.ConnInfo, pluginpb.ConnInfo]) error {
	for i := range f.n {
		if err := s.Send(&pluginpb.ConnInfo{ServiceId: uint32(1000 + i), Knock: &pluginpb.ConnInfo_Knock{Knock: true, Ack: f.answers}}); err != nil {
			f.sent <- err
			if f.ended != nil {
				close(f.ended)
			}
			return err
		}
	}
	f.sent <- nil
	<-s.Context().Done()
	if f.ended != nil {
		close(f.ended)
	}
	return nil
}

// countingStream counts the messages the host's broker has received.
type countingStream struct {
	brokerwire.Stream
	n atomic.Int64
}

func (c *countingStream) Recv() (*pluginpb.ConnInfo, error) {
	info, err := c.Stream.Recv()
	if err == nil {
		c.n.Add(1)
	}
	return info, err
}

// countingHandler counts log records, and keeps the largest count of
// ignored knocks they report.
type countingHandler struct {
	slog.Handler
	n       *atomic.Int64
	ignored *atomic.Int64
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.n.Add(1)
	if strings.Contains(r.Message, "ignored the peer's knock") {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "so_far" && a.Value.Int64() > h.ignored.Load() {
				h.ignored.Store(a.Value.Int64())
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

// hostileRig is a host connected to a hostile plugin's broker service
// over a real unix socket, multiplexed or not, as host.Start connects.
type hostileRig struct {
	host    *Broker
	stream  *countingStream
	ran     chan error
	records atomic.Int64
	ignored atomic.Int64 // knocks ignored, as the log reports them
	close   func()
}

// newHostileRig runs a host's broker, whose Sends time out after
// sendTimeout, on a stream served by svc.
func newHostileRig(t *testing.T, mux bool, sendTimeout time.Duration, svc pluginpb.GRPCBrokerServer) *hostileRig {
	t.Helper()
	dir := testutil.TempDir(t)
	link := serveBrokerService(t, dir, mux, func(*multiplexer) pluginpb.GRPCBrokerServer { return svc })
	r := &hostileRig{ran: make(chan error, 1)}
	r.host = newBroker(brokerwire.Options{Mux: link.hmux, Unix: listen.UnixConfig{Dir: dir}, Logger: slog.New(countingHandler{slog.NewTextHandler(io.Discard, nil), &r.records, &r.ignored})})
	r.host.sendTimeout = sendTimeout
	// As host.Start does: the stream's context is cancelled once Run returns.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := pluginpb.NewGRPCBrokerClient(link.conn).StartStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.stream = &countingStream{Stream: s}
	go func() { r.ran <- r.host.run(r.stream); cancel() }()
	r.close = func() {
		r.host.Close()
		cancel()
		link.conn.Close()
		select {
		case <-r.ran:
		case <-time.After(10 * time.Second):
			t.Error("Run still runs 10 s after Close")
		}
		link.stop()
	}
	return r
}

// TestKnockFloodIsBounded: a plugin that sends 200,000 knocks on the broker
// stream and never reads the answers leaves the host, in both broker
// modes, with under 100 goroutines above its baseline and under 32 MiB more
// memory (heap and stacks); the excess is logged a few times, not once a
// knock, and Close leaves no goroutine behind. So do 50,000 consents to
// knocks the host never sent, which must not make it open streams (each
// of which would cost a goroutine on either side).
func TestKnockFloodIsBounded(t *testing.T) {
	const knocks = 200_000
	// Measure the whole flood: a peer that does not read ends the stream
	// after the send timeout (TestStalledPeerEndsTheStream), 5 minutes
	// here (newHostileRig).
	for _, tc := range []struct {
		mux, answers bool
		n            int
	}{{false, false, knocks}, {true, false, knocks}, {true, true, knocks / 4}} {
		name := fmt.Sprintf("multiplex=%v", tc.mux)
		if tc.answers {
			name += ",acks"
		}
		t.Run(name, func(t *testing.T) {
			baseGoroutines := runtime.NumGoroutine()
			baseMem := testutil.UsedMemory()
			leaks := goleak.IgnoreCurrent()

			flood := knockFlood{n: tc.n, answers: tc.answers, sent: make(chan error, 1)}
			start := time.Now()
			r := newHostileRig(t, tc.mux, 5*time.Minute, flood)
			maxGoroutines := 0
			// A bound, not a figure: at load 30 the flood took over a
			// minute (136,519 of 200,000 knocks in 60 s).
			const within = 4 * time.Minute
			deadline := time.Now().Add(within)
			for r.stream.n.Load() < int64(tc.n) && time.Now().Before(deadline) {
				maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
				time.Sleep(5 * time.Millisecond)
			}
			if got := r.stream.n.Load(); got < int64(tc.n) {
				t.Fatalf("the host received %d of %d knocks in %v", got, tc.n, within)
			}
			if err := <-flood.sent; err != nil {
				t.Fatalf("the flood: %v", err)
			}
			maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
			mem := testutil.UsedMemory()
			grown := int64(mem) - int64(baseMem)
			t.Logf("after %d knocks: %d goroutines at most (baseline %d), memory grown by %.1f MiB, %d log records",
				tc.n, maxGoroutines, baseGoroutines, float64(grown)/(1<<20), r.records.Load())
			if maxGoroutines-baseGoroutines >= 100 {
				t.Errorf("%d goroutines during the flood, %d above the baseline; want under 100", maxGoroutines, maxGoroutines-baseGoroutines)
			}
			if grown >= 32<<20 {
				t.Errorf("memory grew by %.1f MiB during the flood; want under 32 MiB", float64(grown)/(1<<20))
			}

			r.close()
			if err := goleak.Find(leaks); err != nil {
				t.Errorf("left behind after Close: %v", err)
			}
			// A few records, and one more at most per warnEvery that the
			// flood lasted: a loaded machine makes it last longer.
			took := time.Since(start)
			if n, limit := r.records.Load(), 10+int64(took/warnEvery); n > limit {
				t.Errorf("%d log records for one flood of %v; want at most %d, rate-limited", n, took.Round(time.Second), limit)
			}
			// All but those answered before the peer's flow-control
			// window filled, and MaxPending more, were ignored, and the
			// records say how many.
			if n := r.ignored.Load(); n < int64(tc.n)*9/10 && !tc.answers {
				t.Errorf("the log reports %d knocks ignored; want the count of all ignored", n)
			}
		})
	}
}

// TestStalledPeerEndsTheStream: a peer that stops reading the broker
// stream does not pin a Send for good. Past the send deadline the broker
// gives up on it: Run returns ErrStalled, the broker is closed (a Dial
// fails at once, saying so), and the stream is ended, on the host's side
// (as host.Start runs it) and on the plugin's (ServerHandler).
func TestStalledPeerEndsTheStream(t *testing.T) {
	const sendTimeout = 300 * time.Millisecond
	// Enough answers to fill any flow-control window the peer grants.
	const knocks = 60_000

	t.Run("host", func(t *testing.T) {
		leaks := goleak.IgnoreCurrent()
		flood := knockFlood{n: knocks, sent: make(chan error, 1), ended: make(chan struct{})}
		r := newHostileRig(t, false, sendTimeout, flood)
		select {
		case err := <-r.ran:
			if !errors.Is(err, ErrStalled) {
				t.Errorf("Run returned %v; want ErrStalled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run still runs 30 s into a peer that does not read")
		}
		r.ran <- nil // for r.close
		select {
		case <-flood.ended:
		case <-time.After(10 * time.Second):
			t.Error("the stalled stream was not ended")
		}
		checkClosed(t, r.host)
		r.close()
		if err := goleak.Find(leaks); err != nil {
			t.Errorf("left behind after Close: %v", err)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		leaks := goleak.IgnoreCurrent()
		plugin := newBroker(brokerwire.Options{})
		plugin.sendTimeout = sendTimeout
		returned := make(chan error, 1)
		link := serveBrokerService(t, testutil.TempDir(t), false, func(*multiplexer) pluginpb.GRPCBrokerServer {
			return reportingHandler{serverHandler{b: plugin}, returned}
		})
		// A hostile host: it knocks and never reads the answers.
		stream, err := pluginpb.NewGRPCBrokerClient(link.conn).StartStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sent := make(chan error, 1)
		go func() {
			for i := range knocks {
				if err := stream.Send(&pluginpb.ConnInfo{ServiceId: uint32(i + 1), Knock: &pluginpb.ConnInfo_Knock{Knock: true}}); err != nil {
					sent <- err
					return
				}
			}
			sent <- nil
		}()
		select {
		case <-plugin.done:
		case <-time.After(30 * time.Second):
			t.Fatal("the plugin's broker still runs 30 s into a host that does not read")
		}
		checkClosed(t, plugin)
		select {
		case err := <-returned:
			if !errors.Is(err, ErrStalled) {
				t.Errorf("StartStream returned %v; want ErrStalled", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("StartStream still runs: the stalled stream was not ended")
		}
		link.conn.Close()
		<-sent
		link.stop()
		if err := goleak.Find(leaks); err != nil {
			t.Errorf("left behind: %v", err)
		}
	})
}

// checkClosed checks that b is closed: Dial fails at once.
func checkClosed(t *testing.T, b *Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.Dial(ctx, 12345); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial on a broker that gave up on its stream: %v; want ErrClosed", err)
	}
}

// reportingHandler reports what StartStream returned.
type reportingHandler struct {
	serverHandler
	returned chan<- error
}

func (h reportingHandler) StartStream(s grpc.BidiStreamingServer[pluginpb.ConnInfo, pluginpb.ConnInfo]) error {
	err := h.serverHandler.StartStream(s)
	h.returned <- err
	return err
}
