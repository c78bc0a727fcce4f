// Package remote is the proof that plugkit plugins work as network
// services across a real network. It holds no code, only its test: two
// network namespaces of the test's own, joined by a veth pair, with the
// objectstore plugins served as replicas in one (PLUGKIT_LISTEN, mutual
// TLS) and the host in the other. The test needs root (CI runs as root);
// without it, it fails with a line saying so, and is never skipped.
//
// The pieces it proves live elsewhere: plugin (the service mode),
// host.Dial, and manager.Remote.
package remote
