// Package broker lets a plugin and its host open extra gRPC connections to
// each other, for callbacks: the host serves a service the plugin calls, or
// the plugin serves one more service for the host.
//
// It speaks go-plugin's plugin.GRPCBroker protocol without multiplexing:
// the side that serves (Serve, Accept) opens a new socket and announces
// {service_id, network, address} on the broker stream; the side that calls
// (Dial) waits for the announcement with that ID and dials it with the same
// AutoMTLS settings as the main connection. IDs are agreed out of band,
// usually sent in an ordinary RPC: one side calls NextID and Serve, tells
// the other the ID, and the other calls Dial.
package broker
