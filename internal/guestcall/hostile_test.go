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

// hostileGuest answers every call with what answer gives: a unary
// call on its connection, in a chunk (or as it is, when raw), and a
// streaming call on a loopback stream of its own, after which it ends
// its side.
func hostileGuest(t *testing.T, answer func(id uint32) []byte, raw bool) healthpb.HealthClient {
	t.Helper()
	// Streaming calls.
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
				c.Write(answer(0))
				c.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, br) // until the host ends the call
			}()
		}
	}()
	// Unary calls.
	hostRaw, guestRaw := net.Pipe()
	t.Cleanup(func() { hostRaw.Close() })
	go func() {
		defer guestRaw.Close()
		var h [chunkHeader]byte
		for {
			if _, err := io.ReadFull(guestRaw, h[:]); err != nil {
				return
			}
			b := make([]byte, binary.BigEndian.Uint32(h[1:]))
			if _, err := io.ReadFull(guestRaw, b); err != nil {
				return
			}
			if h[0] != chunkCall || b[0] != kindCall {
				continue
			}
			a := answer(binary.BigEndian.Uint32(b[1:]))
			if !raw {
				a = append(binary.BigEndian.AppendUint32([]byte{chunkCall}, uint32(len(a))), a...)
			}
			if len(a) == 0 {
				return // ends the connection
			}
			guestRaw.Write(a)
		}
	}()
	h := NewHost(hostRaw, 4<<20)
	go io.Copy(io.Discard, h.Conn())
	open := func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }
	cc, err := grpc.NewClient("passthrough:///guest", append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, h.DialOptions(open)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

func frameHead(kind byte, id, n uint32) []byte {
	return appendHead(nil, kind, id, int(n))
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
	count := binary.AppendUvarint(nil, 1<<60)
	for _, tc := range []struct {
		name   string
		answer func(id uint32) []byte
		code   codes.Code
		says   string
		raw    bool // the unary answer is the whole chunk
	}{
		{"a 4 GiB chunk", func(uint32) []byte { return []byte{chunkCall, 0xff, 0xff, 0xff, 0xff} }, codes.Unavailable, "more than the", true},
		{"a 4 GiB header", func(id uint32) []byte { return frameHead(kindHeader, id, 1<<32-1) }, codes.Internal, "more than the", false},
		{"a 4 GiB trailer", func(id uint32) []byte { return frameHead(kindTrailer, id, 1<<32-1) }, codes.Internal, "more than the", false},
		{"a message over the call's limit", func(id uint32) []byte { return frameHead(kindMessage, id, 64<<20) }, codes.ResourceExhausted, "larger than max", false},
		{"a frame of no known kind", func(id uint32) []byte { return append(frameHead('X', id, 1<<30), "junk"...) }, codes.Internal, "unknown kind", false},
		{"a count of 2^60 metadata values", func(id uint32) []byte {
			return append(append(frameHead(kindHeader, id, 10), count...), make([]byte, 10-len(count))...)
		}, codes.Internal, "bad header", false},
		{"an end without a status", func(uint32) []byte { return nil }, codes.Internal, "without a status", true},
		{"two answers to a unary call", func(id uint32) []byte {
			return append(append(frameHead(kindMessage, id, 0), frameHead(kindMessage, id, 0)...), frameHead(kindMessage, id, 0)...)
		}, codes.Internal, "cardinality", false},
		{"a status that is not one", func(id uint32) []byte { return append(frameHead(kindTrailer, id, 4), 2, 0xff, 0xff, 0) }, codes.Internal, "bad status", false},
	} {
		for _, kind := range []string{"unary", "stream"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				if tc.raw && kind == "stream" {
					t.Skip("a stream's answers are frames of its own stream")
				}
				c := hostileGuest(t, tc.answer, tc.raw)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var err error
				grew := heapGrowth(func() {
					if kind == "unary" {
						_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
						return
					}
					var s healthpb.Health_WatchClient
					if s, err = c.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil {
						for err == nil {
							_, err = s.Recv()
						}
					}
				})
				want := tc.code
				if kind == "stream" && tc.name == "two answers to a unary call" {
					// A stream may answer many; the stream's end then has no status.
					want, tc.says = codes.Internal, "without a status"
				}
				if st := status.Convert(err); st.Code() != want || !strings.Contains(st.Message(), tc.says) {
					t.Errorf("the call failed with %v; want %v saying %q", err, want, tc.says)
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
}

// TestSilentGuestCallEnds: a guest that never answers holds a call only
// until its context ends.
func TestSilentGuestCallEnds(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	c := hostileGuest(t, func(uint32) []byte { <-block; return nil }, false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("the call failed with %v; want DeadlineExceeded", err)
	}
}
