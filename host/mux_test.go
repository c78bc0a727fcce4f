package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMultiplexedBrokerCallbacksBothWays: with Command.MultiplexBroker, a
// plugkit plugin's brokered services are called by the host and the
// host's by the plugin, with and without AutoMTLS, and while they are
// served neither process listens on any socket and no socket file exists
// (the plugin's own is closed once the host is connected). The same run
// without multiplexing shows the sockets this saves, so the check can
// fail. The sockets are counted from Linux's /proc; elsewhere the
// callbacks run, uncounted.
func TestMultiplexedBrokerCallbacksBothWays(t *testing.T) {
	count := testutil.CountsListeners()
	for _, tc := range []struct {
		mux, noMTLS bool
	}{{true, false}, {true, true}, {false, false}} {
		t.Run(fmt.Sprintf("mux=%v,mtls=%v", tc.mux, !tc.noMTLS), func(t *testing.T) {
			dir, err := os.MkdirTemp("", "pkmux") // short: unix socket paths are limited
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			hostBefore := 0
			if count {
				hostBefore = testutil.Listeners(t, os.Getpid())
			}
			cfg := config(t, "callback")
			cfg.Security = security(tc.noMTLS)
			cfg.MultiplexBroker = tc.mux
			cfg.Listen.UnixSocketDir = dir
			c := start(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			store := objectstorev1.NewObjectStoreClient(c.Conn())

			hostID := c.Broker().NextID()
			err = c.Broker().Serve(ctx, hostID, func(s *grpc.Server) {
				h := health.NewServer()
				h.SetServingStatus("host", healthpb.HealthCheckResponse_NOT_SERVING)
				healthpb.RegisterHealthServer(s, h)
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"dial": strconv.Itoa(int(hostID))}})
			if !strings.Contains(fmt.Sprint(err), "host says NOT_SERVING") {
				t.Errorf("plugin calling back into the host: %v", err)
			}
			pluginID := c.Broker().NextID()
			if _, err := store.Init(ctx, &objectstorev1.InitRequest{Config: map[string]string{"serve": strconv.Itoa(int(pluginID))}}); err != nil {
				t.Fatal(err)
			}
			conn, err := c.Broker().Dial(ctx, pluginID)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin-callback"})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("host calling the plugin's brokered service: %v %v", resp, err)
			}

			if !count {
				conn.Close()
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				return
			}
			files := testutil.SocketFiles(dir)
			pluginListens := testutil.Listeners(t, c.Pid())
			hostListens := testutil.Listeners(t, os.Getpid()) - hostBefore
			if tc.mux {
				if len(files) != 0 || pluginListens != 0 || hostListens != 0 {
					t.Errorf("multiplexed, yet socket files %v, the plugin listens on %d sockets, the host on %d more", files, pluginListens, hostListens)
				}
			} else if len(files) < 3 || pluginListens < 2 || hostListens < 1 {
				t.Errorf("without multiplexing: socket files %v, plugin listens on %d, host on %d; want the main and two brokered sockets", files, pluginListens, hostListens)
			}
			conn.Close()
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

// TestMultiplexBrokerRefusals: a plugin that does not multiplex (its
// handshake has 6 fields) fails Start with ErrMultiplexNotSupported.
func TestMultiplexBrokerRefusals(t *testing.T) {
	cfg := config(t, "notserving")
	cfg.Security = host.Plaintext()
	cfg.MultiplexBroker = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, cfg.Command, cfg.Options)
	if err == nil {
		c.Close()
		t.Fatal("Start succeeded with a plugin that cannot multiplex")
	}
	if !errors.Is(err, host.ErrMultiplexNotSupported) || !strings.Contains(err.Error(), "MultiplexBroker off") {
		t.Errorf("Start: %v, want ErrMultiplexNotSupported saying what to do", err)
	}
}
