// Package wire holds the facts of the wire that a host and a plugin must
// agree on and that no handshake line carries: the health service name,
// the metadata keys, the catalog's protocol version and the default
// message size.
//
// Both sides import it, so each fact is defined once. It imports nothing,
// so a host that needs one of these facts does not link the plugin's
// server code (package plugin, gRPC's reflection server) to get it. The
// handshake line and the environment a host passes to a plugin are in
// package handshake.
package wire
