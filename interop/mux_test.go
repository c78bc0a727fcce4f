package interop_test

// Broker multiplexing (go-plugin's GRPCBrokerMultiplex, PLUGIN_MULTIPLEX_GRPC)
// in both directions: every brokered connection rides the plugin's one
// connection, and no socket is made for it.

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
	"github.com/plugkit/plugkit/internal/testutil"
)

// shortTempDir is a temporary directory with a path short enough for unix
// sockets several levels below it.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pkmux")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestGoPluginHostMultiplexesPlugkitPlugin: a go-plugin v1.8.0 host with
// GRPCBrokerMultiplex loads a plugkit plugin, which answers true in the
// handshake's 7th field. The go-plugin plugin host serves a service the
// plugkit plugin calls back, and the plugkit plugin serves one the host
// calls, each over the plugin's one connection: while they are in use no
// socket file exists in the directory where both sides would make them,
// neither process listens on any socket (the plugkit plugin's own is
// closed once its host is connected) and Kill is clean. The same run
// without multiplexing shows those sockets, so the check can fail.
func TestGoPluginHostMultiplexesPlugkitPlugin(t *testing.T) {
	for _, mux := range []bool{true, false} {
		t.Run(fmt.Sprintf("multiplex=%v", mux), func(t *testing.T) {
			dir := shortTempDir(t)
			// Where the go-plugin host makes its brokered sockets and, as
			// it passes its environment on, the plugin all of its own.
			t.Setenv("TMPDIR", dir)
			hostBefore := 0
			if testutil.CountsListeners() {
				hostBefore = testutil.Listeners(t, os.Getpid())
			}
			c, store, b := goPluginHost(t, io.Discard, io.Discard, io.Discard, func(cfg *goplugin.ClientConfig) {
				cfg.GRPCBrokerMultiplex = mux
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			// The go-plugin host serves; the plugkit plugin dials.
			id := b.NextId()
			go b.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
				srv := grpc.NewServer(opts...)
				objectstorev1.RegisterObjectStoreServer(srv, fixedKeys{keys: []string{"served-by-go-plugin-host"}})
				return srv
			})
			resp, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "dial:" + itoa(id)})
			if want := []string{"via-broker", "served-by-go-plugin-host", "asked-by-plugkit-plugin"}; err != nil || !slices.Equal(resp.GetKeys(), want) {
				t.Errorf("the plugkit plugin calling back into the go-plugin host: %v %v, want %v", resp.GetKeys(), err, want)
			}

			// The plugkit plugin serves; the go-plugin host dials.
			const pluginID = 77
			if _, err := store.List(ctx, &objectstorev1.ListRequest{Prefix: "serve:" + itoa(pluginID)}); err != nil {
				t.Fatal(err)
			}
			conn, err := b.Dial(pluginID)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got, want := list(t, conn, "asked-by-go-plugin-host"), []string{"served-by-plugkit-plugin", "asked-by-go-plugin-host"}; !slices.Equal(got, want) {
				t.Errorf("the go-plugin host calling the plugkit plugin's service: %v, want %v", got, want)
			}

			if testutil.CountsListeners() { // sockets are counted from Linux's /proc
				files := testutil.SocketFiles(dir)
				pluginListens := testutil.Listeners(t, c.ReattachConfig().Pid)
				hostListens := testutil.Listeners(t, os.Getpid()) - hostBefore
				if mux {
					if len(files) != 0 || pluginListens != 0 || hostListens != 0 {
						t.Errorf("multiplexed, yet socket files %v; the plugin listens on %d sockets, the host on %d more", files, pluginListens, hostListens)
					}
				} else if len(files) < 3 || pluginListens < 2 || hostListens < 1 {
					t.Errorf("without multiplexing: socket files %v, the plugin listens on %d, the host on %d; want the main and two brokered sockets", files, pluginListens, hostListens)
				}
			}
			conn.Close()
			killQuickly(t, c, nil)
		})
	}
}

// TestPlugkitHostMultiplexesGoPlugin: a plugkit host with
// host.Command.MultiplexBroker loads a go-plugin v1.8.0 plugin (which
// multiplexes when asked). The host serves a service the go-plugin plugin
// dials with GRPCBroker.Dial, and the go-plugin plugin serves one with
// AcceptAndServe that the host dials, with AutoMTLS and without. While they
// are in use the only socket file is the go-plugin plugin's own, the plugin
// listens on nothing else and the host on nothing at all; without
// multiplexing the same run makes more. The plugin's own listener may be
// gone: go-plugin v1.8.0's multiplexer accepts one connection and then
// keeps no reference to its listener, which the garbage collector's
// finalizer closes (the socket file stays), so the plugin listens on at
// most that one socket.
func TestPlugkitHostMultiplexesGoPlugin(t *testing.T) {
	for _, tc := range []struct {
		mux, noMTLS bool
	}{{true, false}, {true, true}, {false, false}} {
		t.Run(fmt.Sprintf("multiplex=%v,mtls=%v", tc.mux, !tc.noMTLS), func(t *testing.T) {
			dir := shortTempDir(t)
			hostBefore := 0
			if testutil.CountsListeners() {
				hostBefore = testutil.Listeners(t, os.Getpid())
			}
			cfg := goPluginConfig(t, "gp-store", 4)
			cfg.Security = security(tc.noMTLS)
			cfg.MultiplexBroker = tc.mux
			cfg.Listen.UnixSocketDir = dir
			cfg.Env = append(cfg.Env, "TMPDIR="+dir)
			c := startHost(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			id := c.Broker().NextID()
			if err := c.Broker().Serve(ctx, id, func(s *grpc.Server) {
				objectstorev1.RegisterObjectStoreServer(s, fixedKeys{keys: []string{"served-by-plugkit-host"}})
			}); err != nil {
				t.Fatal(err)
			}
			if got, want := list(t, c.Conn(), "dial:"+itoa(id)), []string{"via-broker", "served-by-plugkit-host", "asked-by-go-plugin"}; !slices.Equal(got, want) {
				t.Errorf("the go-plugin plugin calling back into the host: %v, want %v", got, want)
			}

			const pluginID = 1000
			if got := list(t, c.Conn(), "serve:"+itoa(pluginID)); !slices.Equal(got, []string{"serving"}) {
				t.Fatalf("serve: %v", got)
			}
			conn, err := c.Broker().Dial(ctx, pluginID)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got, want := list(t, conn, "asked-by-plugkit"), []string{"served-by-go-plugin", "asked-by-plugkit"}; !slices.Equal(got, want) {
				t.Errorf("the host calling the go-plugin plugin's service: %v, want %v", got, want)
			}

			if testutil.CountsListeners() { // sockets are counted from Linux's /proc
				files := testutil.SocketFiles(dir)
				pluginListens := testutil.Listeners(t, c.Pid())
				hostListens := testutil.Listeners(t, os.Getpid()) - hostBefore
				if tc.mux {
					if !slices.Equal(files, []string{c.ReattachConfig().Addr.String}) || pluginListens > 1 || hostListens != 0 {
						t.Errorf("multiplexed, yet socket files %v (want only %s); the plugin listens on %d sockets (want its own at most), the host on %d more", files, c.ReattachConfig().Addr.String, pluginListens, hostListens)
					}
				} else if len(files) < 3 || pluginListens < 2 || hostListens < 1 {
					t.Errorf("without multiplexing: socket files %v, the plugin listens on %d, the host on %d; want the main and two brokered sockets", files, pluginListens, hostListens)
				}
			}
			conn.Close()
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}
