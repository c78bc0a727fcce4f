// Package gpecho is the go-plugin v1.8.0 host side of the bench's echo
// plugin: the client both go-plugin hosts (bench/testdata/gphost and
// gpinspect) start it with, so that they measure the same set-up.
package gpecho
