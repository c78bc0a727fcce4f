// Package tlsfiles builds a host's TLS configuration for a plugin service
// from PEM files: for the manager's remotes files and the CLI's --tls-*
// flags.
package tlsfiles
