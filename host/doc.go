// Package host is the host side of plugkit: Start launches a plugin binary
// (one built with plugkit, go-plugin, terraform-plugin-go or anything else
// that speaks go-plugin's gRPC protocol), reads its handshake, connects over
// gRPC with AutoMTLS, checks its health, and returns a Client whose Conn is
// ready for generated gRPC stubs. Reattach connects to a plugin that is
// already running.
//
// The plugin's standard error becomes log/slog records (hclog JSON and
// "[LEVEL] ..." lines are understood; any other bytes are logged as they
// are, never trusted), each carrying the plugin's name. What the plugin
// prints to os.Stdout and os.Stderr after the handshake arrives over the
// GRPCStdio stream and is logged the same way, or copied to Config.Stdout
// and Config.Stderr.
//
// Close stops the plugin politely and then firmly: the Shutdown RPC, a
// wait, SIGTERM, a wait, SIGKILL. It always reaps the process and leaves no
// goroutine behind.
package host
