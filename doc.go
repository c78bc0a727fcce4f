// Package plugkit is a toolkit for versioned, out-of-process gRPC plugins,
// wire-compatible with hashicorp/go-plugin. This package holds no code: it
// is the map of the packages, each of which does one thing. Every public
// package of the module has its bullet here (a test in this package fails
// when one is missing); internal/, the examples and the generated code do
// not.
//
// The plugin side:
//
//   - plugin: Serve and Run a plugin binary: the cookie check, version
//     negotiation, a private socket with AutoMTLS, go-plugin's internal
//     services, hclog-style logs (NewLogger).
//   - plugin/traceexport: imported for its effect, exports the plugin's
//     spans where the OTEL_* environment the host passes on says.
//   - catalog: plugin kinds on the plugin side: typed (kind, major, name)
//     registration with Implement, Describe, routing by name.
//   - tfserve: serve a terraform-plugin-go provider (protocols 5 and 6).
//   - plugintest: test a plugin without building it: serve it inside the
//     test and get a connected host.Client or a manager.
//
// The host side:
//
//   - host: Start a plugin binary (or Reattach to one, or Dial a plugin
//     service) and get a Client with its gRPC connection, broker and a
//     staged Close.
//   - manager: finding plugins (a Finder: plugin directories, plugin
//     services, a Source of your own, with a describe cache and checksum
//     pins) and running them (a Manager: a registry of (kind, name),
//     shared restartable processes, and Dispense: typed, latest major
//     first, adapters for older majors).
//   - describe: the catalog's Describe protocol on the host side (the
//     describe line, the Describe call, the checks of an answer), which
//     the manager, release and the plugkit command share.
//   - compat: which release of a plugin a host can use, in Terraform's words.
//   - release: publish, sign, resolve, install and lock plugin releases
//     through an OCI registry or image layout, as `terraform init` does.
//   - sandbox: a host.Runner that runs a plugin in namespaces, as an
//     unprivileged user, under seccomp and Landlock, with resource limits
//     (Linux).
//   - wasmhost: a host.Runner that runs a plugin built for wasip1 inside
//     the host's process with wazero, isolated on every system.
//   - conformance: a kind's conformance suites, one per major, and the
//     compatibility matrix of host majors against plugin releases.
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
//   - protocheck/bufconfig, protocheck/load, protocheck/report and
//     protocheck/ruleset: its stages, each usable alone: buf's
//     configuration, loading and compiling an input, findings and their
//     formats, the catalogue of rules.
//
// Commands:
//
//   - cmd/plugkit: the CLI: inspect, call, list, check and release
//     plugins, the protocol checker, the demo.
//   - cmd/plugkit-proto: `plugkit proto` as a lean binary of its own.
//   - cmd/protoc-gen-plugkit: the buf and protoc plugin that writes a
//     kind's Go glue from its protocol files.
//
// Proofs, with no API of their own:
//
//   - interop, faults and bench: against go-plugin, the fault suite, the
//     benchmarks.
//   - remote and deploy/kubernetes: plugins as network services across two
//     network namespaces, and the Kubernetes manifests checked against them.
//   - sdk and sdk/sdktest: the SDKs for plugins in other languages and the
//     Go side's proof of them.
//
// The examples are kinds written with plugkit: examples/objectstore (three
// majors, adapters, capabilities), examples/greeter (the kind that
// docs/your-own-kind.md builds from scratch) and examples/terraform/provider.
package plugkit
