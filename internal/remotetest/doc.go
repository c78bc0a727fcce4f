// Package remotetest holds what the tests of plugin services share: a PKI
// written to files (a service certificate, a host certificate, and a host
// certificate from a foreign CA), the environment that turns a plugin
// into a service, and a small gRPC test service that says which replica
// answered and can be made slow.
package remotetest
