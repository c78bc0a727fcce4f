// Command terraform-provider-demo is an example Terraform provider served
// by plugkit (package tfserve) instead of go-plugin. Its source address is
// registry.terraform.io/plugkit/demo; it speaks protocols 6 and 5.
//
// It has one resource, demo_item, with a computed id and a required name,
// and keeps each item as a JSON file, DIR/ID.json, in the directory given
// by the provider attribute dir or, when that is unset, the environment
// variable DEMO_PROVIDER_DIR:
//
//	provider "demo" {
//	  dir = "/tmp/demo-items"
//	}
//
//	resource "demo_item" "first" {
//	  name = "hello"
//	}
//
// Build it as terraform-provider-demo and point Terraform at it with a
// dev_overrides block in a CLI configuration file (no terraform init):
//
//	go build -o ~/tf-dev/terraform-provider-demo ./examples/terraform/provider
//
// See docs/terraform.md for the whole recipe.
//
// The provider is written directly against terraform-plugin-go's
// low-level tfprotov6 API, to show what Terraform asks of a provider; real
// providers usually use terraform-plugin-framework on top of it, which
// tfserve serves just the same (its providerserver returns a
// func() tfprotov6.ProviderServer).
package main
