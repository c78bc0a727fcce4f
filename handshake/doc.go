// Package handshake is the contract between a plugin host and a plugin
// process before any gRPC call is made, as hashicorp/go-plugin defines it:
//
//   - the environment the host gives the plugin (the magic cookie, the app
//     protocol versions it speaks, the port range, the host's AutoMTLS
//     certificate), see Env;
//   - the one line the plugin prints on stdout to say where it listens and
//     what it negotiated, see Line;
//   - plugkit's describe line, which a catalog plugin asked only for its
//     description (EnvDescribe) prints instead, and exits without
//     serving, see FormatDescribe and ParseDescribe;
//   - the choice of app protocol version, see Negotiate;
//   - the description of a running plugin a host reattaches to (Terraform's
//     TF_REATTACH_PROVIDERS), see Reattach.
//
// The package does no I/O. Everything in it is pure and is fuzzed.
package handshake
