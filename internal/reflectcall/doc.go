// Package reflectcall calls gRPC methods it knows only by name: it asks
// the server for its descriptors through server reflection (grpc
// reflection v1, falling back to v1alpha), builds them with protodesc,
// and calls with dynamicpb messages read from and written as protobuf
// JSON. No compiled stubs are needed, so a host can call any method of
// any go-plugin plugin, such as tfplugin6.Provider/GetProviderSchema.
//
// It backs the plugkit call command and the tests that talk to Terraform
// providers without linking their protocol's stubs.
package reflectcall
