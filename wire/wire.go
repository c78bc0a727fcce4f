package wire

// HealthService is the service name whose grpc.health.v1 health a plugin
// reports and a host checks. go-plugin hosts check this name, so it is
// fixed.
const HealthService = "plugin"

// VersionHeader is the response header in which a plugin service names
// the app protocol version it serves, on answers to grpc.health.v1
// Health/Check: a service reached over the network has no handshake line
// to carry it.
const VersionHeader = "plugkit-protocol-version"

// NameKey is the gRPC metadata key naming the implementation a catalog
// call is for, when one plugin serves several implementations of a kind.
const NameKey = "plugkit-name"

// CatalogProtocolVersion is the app protocol version of the handshake for
// plugins that serve a catalog. Kinds carry their own majors; this number
// versions only the catalog mechanism itself.
const CatalogProtocolVersion = 1

// DefaultMaxMessageSize is the largest gRPC message a host and a plugin
// send or receive by default: 64 MiB, against gRPC's own 4 MiB, which
// Terraform schemas and object-store chunks outgrow.
const DefaultMaxMessageSize = 64 << 20

// EnvHostPID is the environment variable in which a host passes its
// process id to a plugin it runs directly (no Runner between them): a
// plugin that starts after its host already died, re-parented, tells so
// from it (see plugin.EnvHostPID).
const EnvHostPID = "PLUGKIT_HOST_PID"

// EnvStdioPipes, set to 1 by a plugkit host in a launched plugin's
// environment, says that the host reads the plugin's standard output and
// standard error pipes to their end and needs no GRPCStdio stream: a
// plugkit plugin then leaves os.Stdout and os.Stderr on those pipes and
// answers its health check with StdioPipesHeader, and the host opens no
// stdio stream (two goroutines and a stream fewer a plugin, on each side).
// go-plugin plugins ignore it; a host opens the stream for any plugin
// whose health check answer lacks the header.
const EnvStdioPipes = "PLUGKIT_STDIO_PIPES"

// StdioPipesHeader is the response header, value "1", on a plugin's
// answer to grpc.health.v1 Health/Check by which it tells a host that
// asked (EnvStdioPipes) that its output stays on its pipes.
const StdioPipesHeader = "plugkit-stdio-pipes"

// ShutdownIdleHeader is the request header, value "1", on a plugkit
// host's GRPCController/Shutdown call by which it tells a plugin it
// launched that it has no call in flight on the connection (its broker
// stream aside) and needs no stdio stream (StdioPipesHeader): nothing is
// left to drain, so a plugkit plugin then stops its server at once
// (grpc.Server.Stop) instead of gracefully, and returns from Run. A
// Shutdown without it (a go-plugin host, or calls in flight) keeps the
// graceful stop, bounded by the plugin's shutdown timeout.
const ShutdownIdleHeader = "plugkit-shutdown-idle"
