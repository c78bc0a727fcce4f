// Command future is an example plugin from the future: it serves kind
// "objectstore" only at major 3, which no host in this repository speaks.
// Hosts that discover it say why they cannot use it and which release of
// it to pick instead.
package main
