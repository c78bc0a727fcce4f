// Package interop holds plugkit's interoperability tests against the real
// hashicorp/go-plugin v1.8.0, which is a test-only dependency. It has no
// API: its tests prove, in both directions, that plugkit speaks go-plugin's
// process model and gRPC protocol.
//
// A plugkit host (host.Start) loads go-plugin plugins served with
// go-plugin's plugin.Serve and DefaultGRPCServer: with AutoMTLS and
// without, negotiating among several versioned plugin sets (and failing
// with both sides' versions named when there is none in common), calling
// through the broker both ways (the go-plugin plugin dials a service the
// plugkit host serves, and the plugkit host dials one the go-plugin plugin
// serves with AcceptAndServe), and listing go-plugin's internal services
// through gRPC reflection.
//
// A go-plugin host (plugin.NewClient with AutoMTLS) loads a plugkit plugin:
// the TLS handshake, the health check (Ping), real data through the
// example object-store service, the plugin's stdout forwarded to
// SyncStdout, the plugin's log records parsed by go-plugin into its hclog
// logger with their levels, Kill returning at once because the Shutdown
// RPC works (go-plugin otherwise waits 2 s, then SIGKILLs), and the plugkit
// plugin exiting by itself when its go-plugin host is SIGKILLed. The
// shipped example plugin (examples/objectstore/plugins/memory), built by
// the test, runs under a go-plugin host too. The broker works both ways
// here as well, also with go-plugin's UnixSocketConfig (socket group).
//
// Broker multiplexing works both ways: a go-plugin host with
// GRPCBrokerMultiplex loads a plugkit plugin (which answers true in the
// handshake's 7th field), and a plugkit host with
// host.Command.MultiplexBroker loads a go-plugin plugin. Callbacks run both
// ways over the plugin's one connection, and the tests check in /proc that
// no process listens on a socket for them and no socket file is made,
// against the same run without multiplexing.
//
// Reattach works both ways: go-plugin reattaches to a plugkit plugin, and
// plugkit to a go-plugin plugin (go-plugin's Client.ReattachConfig omits
// the protocol version, which plugkit requires and checks).
//
// Hostile standard error (a JSON line whose @message is an object, a
// 200 KB line, binary junk) leaves a plugkit host working; the same input
// panics a go-plugin host, which a test shows in a child process.
//
// The test binary doubles as every plugin and helper host the tests need:
// run with PLUGKIT_INTEROP_MODE set, it becomes that program (see
// TestMain in main_test.go).
package interop
