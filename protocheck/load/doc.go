// Package load is the loading stage of protocheck: it reads an input (a
// directory, or a git input in buf's form), applies its buf configuration
// (package bufconfig), compiles its .proto files with protocompile and
// returns an Image: the files with their descriptors and the files they
// import. Files that do not compile give a *CompileError whose problems
// keep the compiler's positions.
package load
