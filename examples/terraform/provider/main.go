package main

import (
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/plugkit/plugkit/tfserve"
)

// Address is the provider's source address.
const Address = "registry.terraform.io/plugkit/demo"

func main() {
	tfserve.Serve(tfserve.Config{
		Name: Address,
		V6:   func() tfprotov6.ProviderServer { return newProvider() },
	})
}
