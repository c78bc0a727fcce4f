package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plugkit/plugkit/internal/goplugin/pluginpb"
)

// knocked handles a knock message from the peer: a request to dial one of
// this side's services over the multiplexed connection, or the answer to
// one of this side's own knocks.
func (b *Broker) knocked(id uint32, k *pluginpb.ConnInfo_Knock) {
	if k.GetAck() {
		select {
		case b.acks <- &pluginpb.ConnInfo{ServiceId: id, Knock: k}:
		default:
			// Nobody reads answers this fast unless one is stale: keep
			// the newest.
			select {
			case <-b.acks:
			default:
			}
			select {
			case b.acks <- &pluginpb.ConnInfo{ServiceId: id, Knock: k}:
			default:
			}
		}
		return
	}
	if !k.GetKnock() {
		return
	}
	go func() {
		refusal := "this side does not multiplex broker connections: the host must not ask for multiplexing (go-plugin: GRPCBrokerMultiplex false)"
		if b.opts.Mux != nil {
			refusal = b.opts.Mux.admit(id, b.done)
		}
		err := b.send(context.Background(), &pluginpb.ConnInfo{ServiceId: id, Knock: &pluginpb.ConnInfo_Knock{Knock: true, Ack: true, Error: refusal}})
		if err != nil {
			b.logger().Warn("broker: answering the peer's knock", "service", id, "error", err)
		}
	}()
}

// knockOpen asks the peer to accept the next stream for service id, waits
// for its consent and opens the stream.
func (b *Broker) knockOpen(ctx context.Context, id uint32) (net.Conn, error) {
	b.dialMu.Lock()
	defer b.dialMu.Unlock()
	select {
	case <-b.acks: // an answer to a knock abandoned earlier
	default:
	}
	if err := b.send(ctx, &pluginpb.ConnInfo{ServiceId: id, Knock: &pluginpb.ConnInfo_Knock{Knock: true}}); err != nil {
		return nil, err
	}
	for {
		select {
		case a := <-b.acks:
			if a.GetServiceId() != id {
				continue // stale
			}
			if e := a.GetKnock().GetError(); e != "" {
				return nil, fmt.Errorf("broker: the peer refused a connection to service %d: %s", id, e)
			}
			return b.opts.Mux.Open()
		case <-b.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("broker: the peer did not answer the knock for service %d in time: %w", id, ctx.Err())
		}
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
	creds := insecure.NewCredentials()
	if b.opts.TLS != nil {
		creds = credentials.NewTLS(b.opts.TLS)
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			if !used.Swap(true) {
				return first, nil
			}
			return b.knockOpen(ctx, id)
		}),
	}, b.opts.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///broker-"+strconv.FormatUint(uint64(id), 10), opts...)
	if err != nil {
		first.Close()
		return nil, fmt.Errorf("broker: dialing service %d: %w", id, err)
	}
	conn.Connect()
	return conn, nil
}
