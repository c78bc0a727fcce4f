// Package tfserve serves a Terraform provider written with
// github.com/hashicorp/terraform-plugin-go through plugkit's plugin side
// (package plugin) instead of hashicorp/go-plugin.
//
// Terraform Core launches the provider binary as a go-plugin gRPC plugin:
// it sets the magic cookie TF_PLUGIN_MAGIC_COOKIE, offers app protocol
// versions 5 and 6, and turns on AutoMTLS. tfserve answers with the
// highest version the provider and Terraform share, serving the provider's
// tfplugin6.Provider or tfplugin5.Provider gRPC service next to the
// services every go-plugin plugin has (health, reflection, broker,
// controller, stdio).
//
// A provider written against tfprotov6 needs one line in main:
//
//	func main() {
//		tfserve.Serve(tfserve.Config{
//			Name: "registry.terraform.io/example/demo",
//			V6:   func() tfprotov6.ProviderServer { return newProvider() },
//		})
//	}
//
// The same binary also speaks protocol 5 to hosts that offer only 5
// (Terraform before 0.15, tools built on tfplugin5): the v6 server is wrapped by terraform-plugin-mux's tf6to5server when, and
// only when, protocol 5 is negotiated. A provider whose schema uses nested
// attributes cannot be downgraded; the plugin then fails at start with the
// reason, and hosts offering 6 are unaffected. Set Config.V6Only to offer
// 6 alone, or Config.V5 to serve a tfprotov5 provider of your own.
//
// See docs/terraform.md for the two-minute recipe: building the binary,
// pointing Terraform at it with dev_overrides, and looking inside it with
// plugkit inspect and plugkit call.
package tfserve
