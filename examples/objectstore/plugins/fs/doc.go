// Command fs is an example plugin: an object store that keeps each object
// as a file in a directory (Init config "dir", or OBJECTSTORE_FS_DIR). It
// serves kind "objectstore" as "example.com/fs" at major 2 (minor 1, with
// the "presign" capability: file:// URLs) and at major 1, from one binary.
package main
