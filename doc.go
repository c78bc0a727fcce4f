// Package plugkit is a toolkit for versioned, out-of-process gRPC plugins,
// wire-compatible with hashicorp/go-plugin. This package holds no code: it
// is the map of the packages, each of which does one thing.
//
// The plugin side:
//
//   - plugin: Serve and Run a plugin binary: the cookie check, version
//     negotiation, a private socket with AutoMTLS, go-plugin's internal
//     services, hclog-style logs (NewLogger).
//   - catalog: plugin kinds on the plugin side: typed (kind, major, name)
//     registration with Implement, Describe, routing by name.
//   - tfserve: serve a terraform-plugin-go provider (protocols 5 and 6).
//
// The host side:
//
//   - host: Start a plugin binary (or Reattach to one) and get a Client with
//     its gRPC connection, broker and a staged Close.
//   - manager: discovery of plugin directories with a describe cache, a
//     registry of (kind, name), shared restartable processes, checksum
//     pins, and Dispense: typed, latest major first, adapters for older
//     majors.
//   - describe: the catalog's Describe protocol on the host side (the
//     describe line, the Describe call, the checks of an answer), which
//     the manager, release and the plugkit command share.
//   - compat: which release of a plugin a host can use, in Terraform's words.
//
// Both sides:
//
//   - handshake: the handshake line, the environment contract and version
//     negotiation.
//   - wire: the other facts of the wire both sides agree on (health
//     service name, version header, catalog name key and protocol version,
//     default message size); it imports nothing.
//   - automtls: AutoMTLS's throwaway certificates and mutual TLS.
//   - broker: go-plugin's connection broker, for callbacks either way.
//
// Protocol files:
//
//   - protocheck: the breaking-change checker behind `plugkit proto` (buf's
//     rules, ADR-044, versioned protocol histories).
//
// The command cmd/plugkit inspects, calls, lists and checks plugins. The
// examples are kinds written with plugkit: examples/objectstore (three
// majors, adapters, capabilities), examples/greeter (the kind that
// docs/your-own-kind.md builds from scratch) and examples/terraform/provider.
package plugkit
