package manager

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// endedStream is a client stream whose RecvMsg returns err.
type endedStream struct {
	grpc.ClientStream
	err error
}

func (s endedStream) RecvMsg(any) error { return s.err }

// TestObservedStreamPassesEndOfStream: the end of a stream is io.EOF, also
// when a stream interceptor wraps it; it is returned as it is, never taken
// for a crash of the plugin (which would restart it).
func TestObservedStreamPassesEndOfStream(t *testing.T) {
	t.Parallel()
	for _, eof := range []error{io.EOF, fmt.Errorf("interceptor: %w", io.EOF)} {
		s := &observedStream{ClientStream: endedStream{err: eof}, method: "/x.Y/Z"}
		if err := s.RecvMsg(nil); !errors.Is(err, io.EOF) || err != eof {
			t.Errorf("RecvMsg ending with %v returned %v, want it unchanged", eof, err)
		}
	}
}

func TestCallPolicyDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    CallPolicy
		kind string
		want time.Duration
	}{
		{CallPolicy{}, "kv", DefaultCallDeadline},
		{CallPolicy{Deadline: time.Second}, "kv", time.Second},
		{CallPolicy{Deadline: -1}, "kv", 0},
		{CallPolicy{Deadline: time.Second, Kinds: map[string]time.Duration{"kv": 2 * time.Second}}, "kv", 2 * time.Second},
		{CallPolicy{Deadline: time.Second, Kinds: map[string]time.Duration{"kv": -1}}, "kv", 0},
		{CallPolicy{Deadline: time.Second, Kinds: map[string]time.Duration{"kv": -1}}, "other", time.Second},
		{CallPolicy{Kinds: map[string]time.Duration{"kv": 0}}, "kv", DefaultCallDeadline},
	} {
		if got := tc.p.deadline(tc.kind); got != tc.want {
			t.Errorf("%+v.deadline(%q) = %v, want %v", tc.p, tc.kind, got, tc.want)
		}
	}
}
