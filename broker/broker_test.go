package broker

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/brokerwire"
	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// floodStream is a peer that announces what it is given, then ends.
type floodStream struct {
	in chan *pluginpb.ConnInfo
}

func (f *floodStream) Send(*pluginpb.ConnInfo) error { return nil }

func (f *floodStream) Recv() (*pluginpb.ConnInfo, error) {
	info, ok := <-f.in
	if !ok {
		return nil, io.EOF
	}
	return info, nil
}

// TestAnnouncementsAreBounded: a peer announcing thousands of services
// nobody dials, with huge addresses, cannot make the broker hold them; an
// announcement somebody waits for still gets through, and the drops are
// logged.
func TestAnnouncementsAreBounded(t *testing.T) {
	var logs bytes.Buffer
	b := newBroker(brokerwire.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer b.Close()
	stream := &floodStream{in: make(chan *pluginpb.ConnInfo)}
	done := make(chan struct{})
	go func() {
		b.run(stream)
		close(done)
	}()

	// Somebody waits for service 99999 before the flood.
	dialed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		conn, err := b.Dial(ctx, 99999)
		if err == nil {
			conn.Close()
		}
		dialed <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		_, waiting := b.pending[99999]
		b.mu.Unlock()
		if waiting || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}

	huge := strings.Repeat("a", 1<<20)
	for id := uint32(1); id <= 5000; id++ {
		stream.in <- &pluginpb.ConnInfo{ServiceId: id, Network: "unix", Address: "/tmp/s" + strings.Repeat("x", int(id%50))}
		stream.in <- &pluginpb.ConnInfo{ServiceId: id + 100000, Network: "unix", Address: huge}
	}
	stream.in <- &pluginpb.ConnInfo{ServiceId: 99999, Network: "unix", Address: "/tmp/awaited.sock"}
	close(stream.in)
	<-done

	if err := <-dialed; err != nil {
		t.Errorf("the awaited announcement did not get through: %v", err)
	}
	b.dropWarn.mu.Lock()
	dropped := b.dropWarn.total
	b.dropWarn.mu.Unlock()
	b.mu.Lock()
	n := len(b.pending)
	held := 0
	for _, ch := range b.pending {
		select {
		case info := <-ch:
			held += len(info.GetAddress())
			ch <- info
		default:
		}
	}
	b.mu.Unlock()
	if n > MaxPending || held > MaxPending*MaxAddress {
		t.Errorf("%d announcements (%d address bytes) pending; want at most %d", n, held, MaxPending)
	}
	if dropped < 5000 {
		t.Errorf("%d announcements dropped, want every huge one and the unsolicited overflow", dropped)
	}
	if !strings.Contains(logs.String(), "dropped the peer's announcement") {
		t.Errorf("the drops were not logged:\n%s", logs.String())
	}
	if c := strings.Count(logs.String(), "\n"); c > 20 {
		t.Errorf("%d log lines: drops must not flood the log", c)
	}
}
