// Package automtls makes the throwaway certificates of go-plugin's AutoMTLS
// and the TLS configurations both sides use with them.
//
// Each side makes a self-signed certificate for "localhost". The host sends
// its certificate to the plugin in PLUGIN_CLIENT_CERT (PEM); the plugin
// sends its own back in the handshake line (DER). Each side then trusts
// exactly the other's certificate, and both require it: a process on the
// same machine without the host's key cannot talk to the plugin.
//
// plugkit uses ECDSA P-256 keys. go-plugin uses P-521, which costs about
// 30 ms per side to generate; any key Go's TLS accepts interoperates.
// The key exchange is X25519 (P-256 for a peer without it), not Go's
// default hybrid X25519MLKEM768: see Identity.Config for why. A go-plugin
// peer, which offers both, agrees on X25519.
package automtls
