// Package kindgen is protoc-gen-plugkit's generator: from a kind's protocol
// files, one protobuf package per major, it writes each major's constants
// (kind, major, newest minor, each minor's capability), the host's typed
// client over manager.Conn with its minor checks, the forwarding adapter
// from the previous major and a typed Open, and, in a subpackage of its
// own so that hosts do not link the plugin server, the plugin's typed
// registration for catalog.New.
//
// A package declares its kind by its name, <kind>.v<major> (kv.v2,
// acme.kv.v2), or with a line "plugkit: kind NAME" in the comments above
// its package statement. Each minor of a major is declared there too, with
// the capability that announces it: "plugkit: minor 2.1 ttl". Elements
// added by a minor say so with protocheck's ADR-044 line, "Since: kv 2.1".
// Input that breaks these rules is an error with file:line, never code that
// fails later.
package kindgen
