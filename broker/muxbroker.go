package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// knockWaiter is this side's knock waiting for its answer.
type knockWaiter struct {
	id uint32
	ch chan knockResult // buffered: the answer never waits
}

type knockResult struct {
	conn net.Conn
	err  error
}

// knockAnswer is the answer to one of the peer's knocks: consent, or a
// refusal.
type knockAnswer struct {
	id      uint32
	refusal string
}

// knocked handles a knock message from the peer: a request to dial one of
// this side's services over the multiplexed connection, or the answer to
// one of this side's own knocks.
//
// A knock costs no goroutine: it waits (up to knockWait) for its listener
// in the Mux's queue, which has one timer, and its answer is queued for
// Run's one sender. At most
// MaxPending knocks wait or are queued; the peer's knocks beyond are
// ignored, and the peer's Dial times out.
//
// Streams and knocks pair up by order, so both ends keep it: the sender
// queues a consented ID and sends the consent in one step, and this side
// opens the stream for a consent as soon as it arrives, in the order
// consents arrive, even when the knock behind it was abandoned (the stream
// is then closed at once).
func (b *Broker) knocked(id uint32, k *pluginpb.ConnInfo_Knock) {
	if k.GetAck() {
		b.answered(id, k.GetError())
		return
	}
	if !k.GetKnock() {
		return
	}
	b.mu.Lock()
	if b.held >= MaxPending {
		b.mu.Unlock()
		b.knockWarn.warn(b.logger(), "broker: ignored the peer's knock: too many of its knocks wait for an answer (is the peer reading the broker stream?)", "service", id, "limit", MaxPending)
		return
	}
	b.held++
	b.mu.Unlock()
	if b.mux == nil {
		b.queueAnswer(id, "this side does not multiplex broker connections: the host must not ask for multiplexing (go-plugin: GRPCBrokerMultiplex false)")
		return
	}
	b.mux.admit(id, func(refusal string) { b.queueAnswer(id, refusal) })
}

// queueAnswer queues the answer to an admitted knock, and starts the
// sender of answers at the first. It never blocks: the answers queued are
// among the knocks held, at most MaxPending, the queue's capacity. Knocks
// arrive only while Run reads the stream, which made runEnded.
func (b *Broker) queueAnswer(id uint32, refusal string) {
	b.answers <- knockAnswer{id: id, refusal: refusal}
	b.senderOnce.Do(func() { go b.answerKnocks(b.runEnded) })
}

// answerKnocks sends the queued answers to the peer's knocks, in order,
// until ended is closed or the broker is.
func (b *Broker) answerKnocks(ended <-chan struct{}) {
	for {
		var a knockAnswer
		select {
		case a = <-b.answers:
		case <-ended:
			return
		case <-b.done:
			return
		}
		b.mu.Lock()
		b.held--
		b.mu.Unlock()
		if a.refusal == "" {
			b.mux.expectNext(a.id)
		}
		err := b.send(context.Background(), &pluginpb.ConnInfo{ServiceId: a.id, Knock: &pluginpb.ConnInfo_Knock{Knock: true, Ack: true, Error: a.refusal}})
		if err != nil {
			b.answerWarn.warn(b.logger(), "broker: answering the peer's knock", "service", a.id, "error", err)
		}
	}
}

// answered handles the peer's answer to a knock for id: it opens the
// stream the peer now expects and hands it to the waiting knock.
//
// Only answers to knocks this side sent count: an answer the peer sends
// when none of this side's knocks awaits one is ignored, so that a peer
// cannot make this side open streams at will.
func (b *Broker) answered(id uint32, refusal string) {
	b.mu.Lock()
	if b.unanswered == 0 {
		b.mu.Unlock()
		b.ackWarn.warn(b.logger(), "broker: ignored the peer's answer to a knock this side did not send", "service", id)
		return
	}
	b.unanswered--
	b.mu.Unlock()
	var r knockResult
	switch {
	case refusal != "":
		r.err = fmt.Errorf("broker: the peer refused a connection to service %d: %s", id, refusal)
	case b.mux == nil:
		r.err = errors.New("broker: the peer answered a knock, but this side does not multiplex")
	default:
		r.conn, r.err = b.mux.Open()
	}
	b.mu.Lock()
	w := b.waiter
	if w != nil && w.id == id {
		b.waiter = nil
		w.ch <- r
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	if r.conn != nil {
		r.conn.Close() // the answer to an abandoned knock
	}
}

// knockOpen asks the peer to accept the next stream for service id and
// returns that stream once the peer consents.
func (b *Broker) knockOpen(ctx context.Context, id uint32) (net.Conn, error) {
	b.dialMu.Lock()
	defer b.dialMu.Unlock()
	w := &knockWaiter{id: id, ch: make(chan knockResult, 1)}
	b.mu.Lock()
	b.waiter = w
	b.mu.Unlock()
	abandon := func() {
		b.mu.Lock()
		if b.waiter == w {
			b.waiter = nil
		}
		b.mu.Unlock()
		select {
		case r := <-w.ch:
			if r.conn != nil {
				r.conn.Close()
			}
		default:
		}
	}
	// Counted before it is sent: the answer may come before Send returns.
	b.mu.Lock()
	b.unanswered++
	b.mu.Unlock()
	if err := b.send(ctx, &pluginpb.ConnInfo{ServiceId: id, Knock: &pluginpb.ConnInfo_Knock{Knock: true}}); err != nil {
		b.mu.Lock()
		b.unanswered--
		b.mu.Unlock()
		abandon()
		return nil, err
	}
	select {
	case r := <-w.ch:
		return r.conn, r.err
	case <-b.done:
		abandon()
		return nil, ErrClosed
	case <-ctx.Done():
		abandon()
		return nil, fmt.Errorf("broker: the peer did not answer the knock for service %d in time: %w", id, ctx.Err())
	}
}

// dialMux connects to service id over the multiplexed connection. The
// first stream is opened now, so that a refusal is Dial's error; gRPC's
// reconnections knock again.
func (b *Broker) dialMux(ctx context.Context, id uint32) (*grpc.ClientConn, error) {
	first, err := b.knockOpen(ctx, id)
	if err != nil {
		return nil, err
	}
	var used atomic.Bool
	conn, err := grpc.NewClient("passthrough:///broker-"+strconv.FormatUint(uint64(id), 10), b.dialOptions(func(ctx context.Context) (net.Conn, error) {
		if !used.Swap(true) {
			return first, nil
		}
		return b.knockOpen(ctx, id)
	})...)
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("broker: dialing service %d: %w", id, err)
	}
	conn.Connect()
	return conn, nil
}
