// Package testpki is a tiny certificate authority for tests and examples
// that need a PKI of their own: a CA, server and client certificates
// signed by it, written as PEM files the way a team's own PKI (or
// cert-manager) would hand them out. It is not for production keys.
package testpki
