package wasmhost_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/connectivity"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestGuestCallPaths: a guest's calls go without HTTP/2 (call streams:
// the host's gRPC connection never dials), unless the guest serves
// HTTP/2 alone, as every guest built before call streams does, or the
// host traces its calls (its stats handler sees HTTP/2 calls only); both
// others work as before, and the traced host records the call's span.
func TestGuestCallPaths(t *testing.T) {
	rt := sharedRuntime()
	for _, tc := range []struct {
		name   string
		env    []string
		traced bool
		want   connectivity.State
	}{
		{"call streams", nil, false, connectivity.Idle},
		{"a guest that serves HTTP/2 alone", []string{"PLUGKIT_GUEST_HTTP2=1"}, false, connectivity.Ready},
		{"a traced host", nil, true, connectivity.Ready},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := command(t, rt)
			cmd.Env = tc.env
			opts := host.Options{Versions: []int{1, 2}, Logger: testutil.Logger(t)}
			var exp *tracetest.InMemoryExporter
			if tc.traced {
				exp = tracetest.NewInMemoryExporter()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
				t.Cleanup(func() { tp.Shutdown(context.Background()) })
				opts.Telemetry.TracerProvider = tp
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := host.Start(ctx, cmd, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for range 3 {
				if err := exists(c, "yes"); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.Conn().GetState(); got != tc.want {
				t.Errorf("the host's gRPC connection is %v; want %v", got, tc.want)
			}
			if exp != nil && !hasSpan(exp, objectstorev1.ObjectStore_ServiceDesc.ServiceName+"/Exists") {
				t.Errorf("no span of the call among %d", len(exp.GetSpans()))
			}
		})
	}
}

// hasSpan reports a span whose name ends with suffix.
func hasSpan(exp *tracetest.InMemoryExporter, suffix string) bool {
	for _, s := range exp.GetSpans() {
		if strings.HasSuffix(s.Name, suffix) {
			return true
		}
	}
	return false
}
