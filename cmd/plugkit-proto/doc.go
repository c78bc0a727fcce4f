// Command plugkit-proto is "plugkit proto" as a binary of its own: the same
// breaking, history and rules subcommands, flags, output and exit codes,
// without the gRPC plugin host, so that a process starts in a fraction of
// the time. CI jobs that check many pairs of releases one process per pair
// use it:
//
//	plugkit-proto breaking proto --against .git#tag=v1.4,subdir=proto
package main
