// Package backend holds the storage of the example object-store plugins
// (in memory, or files in a directory) and the gRPC servers that put each
// major version of the objectstore API in front of it.
package backend
