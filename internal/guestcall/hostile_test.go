package guestcall

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// hostileGuest accepts call streams on a loopback listener, reads each
// call up to its end, answers with what answer writes, and ends its
// side of the stream.
func hostileGuest(t *testing.T, answer func(w io.Writer)) healthpb.HealthClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := io.ReadFull(br, make([]byte, len(Magic))); err != nil {
					return
				}
				any := func(byte, uint32) int { return MaxMetadata }
				for {
					kind, _, _, err := readFrame(br, any)
					if err != nil || kind == kindCancel {
						return
					}
					if kind == kindEnd {
						break
					}
				}
				answer(c)
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, br) // until the host ends the call
			}()
		}
	}()
	open := func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	cc, err := grpc.NewClient("passthrough:///guest", append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, DialOptions(open)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

func frameHead(kind byte, n uint32) []byte {
	return appendHead(nil, kind, 0, int(n))
}

// heapGrowth runs f and returns how much the heap in use grew.
func heapGrowth(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return after.HeapAlloc - before.HeapAlloc
}

// TestHostileGuestAnswers: what a guest writes back is bounded before the
// host reads or allocates it, and each bad answer fails the call with a
// status that says what the guest did, at once.
func TestHostileGuestAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer []byte
		code   codes.Code
		says   string
	}{
		{"a 4 GiB header", frameHead(kindHeader, 1<<32-1), codes.Internal, "more than the"},
		{"a 4 GiB trailer", frameHead(kindTrailer, 1<<32-1), codes.Internal, "more than the"},
		{"a message over the call's limit", frameHead(kindMessage, 64<<20), codes.ResourceExhausted, "larger than max"},
		{"a frame of no known kind", append(frameHead('X', 1<<30), "junk"...), codes.Internal, "unknown kind"},
		{"a count of 2^60 metadata values", append(append(frameHead(kindHeader, 10), binary.AppendUvarint(nil, 1<<60)...), make([]byte, 10-len(binary.AppendUvarint(nil, 1<<60)))...), codes.Internal, "bad header"},
		{"an end without a status", nil, codes.Internal, "without a status"},
		{"two answers to a unary call", append(append(frameHead(kindMessage, 0), frameHead(kindMessage, 0)...), frameHead(kindMessage, 0)...), codes.Internal, "cardinality"},
		{"a status that is not one", append(frameHead(kindTrailer, 4), 2, 0xff, 0xff, 0), codes.Internal, "bad status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileGuest(t, func(w io.Writer) { w.Write(tc.answer) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var err error
			grew := heapGrowth(func() { _, err = c.Check(ctx, &healthpb.HealthCheckRequest{}) })
			if st := status.Convert(err); st.Code() != tc.code || !strings.Contains(st.Message(), tc.says) {
				t.Errorf("the call failed with %v; want %v saying %q", err, tc.code, tc.says)
			}
			if ctx.Err() != nil {
				t.Errorf("the call waited for its deadline")
			}
			if grew > 8<<20 {
				t.Errorf("the host's heap grew by %d MiB", grew>>20)
			}
		})
	}
}

// TestSilentGuestCallEnds: a guest that never answers holds a call only
// until its context ends.
func TestSilentGuestCallEnds(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	c := hostileGuest(t, func(io.Writer) { <-block })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("the call failed with %v; want DeadlineExceeded", err)
	}
}
