// Package plugin is the plugin side of plugkit: Serve turns a program into
// a plugin that any go-plugin gRPC host can launch (a plugkit host,
// Terraform, Vault, Packer, a go-plugin host of your own).
//
// A plugin's main function names its magic cookie and, for each app
// protocol version it speaks, a function that registers that version's
// gRPC services:
//
//	func main() {
//		plugin.Serve(plugin.Config{
//			Cookie: handshake.Cookie{Key: "MYAPP_PLUGIN", Value: "kv"},
//			Versions: map[int]plugin.Register{
//				1: func(s *grpc.Server, _ *broker.Broker) error {
//					kvv1.RegisterKVServer(s, &store{})
//					return nil
//				},
//			},
//		})
//	}
//
// Serve checks the cookie (a person who runs the binary by hand is told
// what it is), negotiates the highest version the host also speaks, listens
// on a private unix socket (or loopback TCP when the host asks, and always
// on Windows, as go-plugin plugins do there), turns on AutoMTLS
// when the host sent a certificate, registers health, reflection and
// go-plugin's broker, controller and stdio services, prints the handshake
// line and serves until the host asks it to stop, or dies. A host's death
// shows on unix as this process being re-parented, on Windows as the
// host's process handle, which the plugin opens at the start, being
// signalled. When the host asks for broker multiplexing
// (PLUGIN_MULTIPLEX_GRPC=true), it takes the host's one connection, closes
// its socket, and carries brokered connections over that connection
// (see package broker).
//
// The same binary runs as a long-lived network service for many hosts when
// started with PLUGKIT_LISTEN=HOST:PORT (EnvListen): no cookie and no
// handshake line; mutual TLS from the PEM files named by PLUGKIT_TLS_CERT,
// PLUGKIT_TLS_KEY and PLUGKIT_TLS_CLIENT_CA, read again when they change;
// bounded handshakes, connections, streams and request memory
// (ServiceLimits); SIGTERM drains it, within its deadline. Hosts connect
// with host.Dial. See docs/remote.md.
//
// Tracing: the spans of the calls a plugin serves and of its brokered
// calls to the host join the host's traces, exported by
// Config.TracerProvider or, in a plugin that imports plugin/traceexport,
// by one the standard OTEL_* environment configures when a tracing
// plugkit host asks for it (it passes its own on, and names the plugin's
// service after the plugin); records of
// NewLogger made with a call's context carry its trace_id and span_id.
// See docs/observability.md.
package plugin
