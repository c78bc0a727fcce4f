// Command tf6provider is a test fixture: a Terraform provider served by
// terraform-plugin-go's own tf6server.Serve, that is by hashicorp/go-plugin,
// not by plugkit. It answers GetMetadata and GetProviderSchema; its other
// methods are left unimplemented (they panic, and are never called).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

type provider struct {
	tfprotov6.ProviderServer // nil: the methods not overridden below
}

func (provider) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	return &tfprotov6.GetMetadataResponse{Resources: []tfprotov6.ResourceMetadata{{TypeName: "fixture_widget"}}}, nil
}

func (provider) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		Provider: &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{}},
		ResourceSchemas: map[string]*tfprotov6.Schema{
			"fixture_widget": {Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{
				{Name: "id", Type: tftypes.String, Computed: true},
				{Name: "size", Type: tftypes.Number, Required: true},
			}}},
		},
	}, nil
}

func main() {
	err := tf6server.Serve("registry.terraform.io/plugkit/fixture", func() tfprotov6.ProviderServer { return provider{} })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
