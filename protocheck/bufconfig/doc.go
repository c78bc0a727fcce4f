// Package bufconfig is the configuration stage of protocheck: buf's
// buf.yaml (v1beta1, v1, v2), buf.work.yaml and buf.lock, read into the
// modules of an input, what each excludes, its breaking configuration and
// its dependencies (found in buf's module cache). It reads no .proto file;
// the loading stage (package load) applies the layout it describes.
package bufconfig
