// Package broker lets a plugin and its host open extra gRPC connections to
// each other, for callbacks: the host serves a service the plugin calls, or
// the plugin serves one more service for the host.
//
// A plugin gets its Broker as the second argument of its plugin.Register;
// a host gets its own from host.Client.Broker. IDs are agreed out of band,
// usually sent in an ordinary RPC: one side calls NextID and Serve (or
// Accept, to serve on a listener of its own), tells the other the ID, and
// the other calls Dial.
//
// It speaks go-plugin's plugin.GRPCBroker protocol. Without multiplexing,
// the side that serves (Serve, Accept) opens a new socket and announces
// {service_id, network, address} on the broker stream; the side that calls
// (Dial) waits for the announcement with that ID and dials it with the same
// AutoMTLS settings as the main connection. With multiplexing (when the
// host asks for it, go-plugin's GRPCBrokerMultiplex), no socket is opened:
// every connection is a stream of one yamux session on the plugin's
// connection, and the caller knocks on the broker stream for the ID, and
// waits for the serving side's consent, before it opens its stream.
//
// A hostile or broken peer costs a bounded amount: at most MaxPending of
// its announcements and MaxPending of its knocks wait here (the rest are
// dropped, with a warning at most once per few seconds that counts them),
// a knock waiting for its service holds no goroutine, its answers to
// knocks this side did not send are ignored, a multiplexed connection
// hands out at most MaxStreams of the peer's streams at once, and a peer
// that stops reading the broker stream is given up on after 10 s (the
// broker is closed; its calls return ErrStalled).
//
// The wiring that builds a broker and runs it on the broker stream stays
// inside plugkit (plugin.Run and the host package do it), so that
// this package shows only what a plugin author or a host user calls.
package broker
