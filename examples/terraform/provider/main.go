package main

import (
	"flag"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/plugkit/plugkit/tfserve"
)

// Address is the provider's source address.
const Address = "registry.terraform.io/plugkit/demo"

func main() {
	debug := flag.Bool("debug", false, "serve in debug mode (under a debugger, without Terraform) and print TF_REATTACH_PROVIDERS for Terraform or OpenTofu")
	flag.Parse()
	tfserve.Serve(tfserve.Config{
		Name:  Address,
		V6:    func() tfprotov6.ProviderServer { return newProvider() },
		Debug: *debug,
	})
}
