// Package earlykey makes a launched plugin's AutoMTLS identity as early as
// the process can: a goroutine started by this package's init, when the
// host asked for AutoMTLS (PLUGIN_CLIENT_CERT is set), makes the key pair
// while the rest of the program's packages initialise and the plugin sets
// up its listener. The key pair is the slowest step a plugin takes before
// its handshake line, and the host waits on that line.
//
// The package imports only the standard library, automtls and handshake,
// so Go initialises it before the protobuf, gRPC and OpenTelemetry
// packages a plugin links, and the goroutine overlaps their
// initialisation.
package earlykey
