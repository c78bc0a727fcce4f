// Command privatize rewrites protoc-gen-go output so that the generated file
// descriptors and types register in the package's own registries (the
// package-level variables Files and Types) instead of protobuf-go's global
// ones.
//
// plugkit's internal protocol files declare package "plugin", as
// hashicorp/go-plugin's do, because the gRPC method paths must match on the
// wire. Registered globally, the two would collide and protobuf-go panics at
// start-up in any program that links both (a Terraform provider served by
// plugkit links terraform-plugin-go, which links go-plugin).
//
// Usage: go run ./internal/tools/privatize DIR
package main
