// Package protocli is the command line of plugkit's .proto checks
// ("breaking", "history", "rules"), shared by "plugkit proto" and the lean
// plugkit-proto binary, which links only protocheck and so starts faster
// when a CI job runs one process per pair of releases.
package protocli
