// Package echo is the service every contender of the benchmarks serves:
// a hand-written gRPC service (no generated code) with a unary echo, a
// download stream and a no-op, over well-known protobuf messages, so the
// plugkit plugin, the go-plugin plugin and the plain grpc-go server run
// the very same handlers.
package echo
