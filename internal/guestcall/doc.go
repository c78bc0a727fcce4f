// Package guestcall carries gRPC calls between a host and its WebAssembly
// guest without HTTP/2: each call is one stream of the guest's
// multiplexed connection, which opens with Magic and then carries frames
// of a kind byte, a 4-byte big-endian length and a payload. The host
// opens the stream and sends the call's header (method, timeout,
// metadata), its messages, the end of them, or a cancel; the guest
// answers with its header metadata, its messages and a trailer (the
// status as a google.rpc.Status and the trailer metadata). Messages are
// encoded with grpc-go's proto codec and statuses with its status
// package, so handlers, interceptors and clients see exactly what they see
// over HTTP/2.
//
// The guest's side (NewServer) dispatches to the handlers registered on
// its *grpc.Server directly, with the server's interceptors, on the
// goroutine of the call; the host's side (DialOptions) is the innermost
// interceptor of its *grpc.ClientConn, so that every interceptor the host
// chains runs as before. Either side bounds what the other controls:
// every frame's length before it is read, messages by the call's size
// limits, metadata by MaxMetadata.
package guestcall
