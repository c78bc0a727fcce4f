package tfserve_test

import (
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/plugkit/plugkit/tfserve"
)

// newDemoProvider stands for a provider's constructor, such as
// terraform-plugin-framework's providerserver.NewProtocol6(p)().
func newDemoProvider() tfprotov6.ProviderServer { return testProvider{} }

// A provider's main function: serve as protocols 6 and 5 to Terraform.
func ExampleServe() {
	tfserve.Serve(tfserve.Config{
		Name: "registry.terraform.io/example/demo",
		V6:   newDemoProvider,
	})
}

// PluginConfig shows what Serve hands to plugkit's plugin side.
func ExampleConfig_PluginConfig() {
	pc, err := tfserve.Config{
		Name: "registry.terraform.io/example/demo",
		V6:   newDemoProvider,
	}.PluginConfig()
	if err != nil {
		fmt.Println(err)
		return
	}
	var versions []int
	for v := range pc.Versions {
		versions = append(versions, v)
	}
	slices.Sort(versions)
	fmt.Println("cookie:", pc.Cookie.Key)
	fmt.Println("protocol versions:", versions)
	// Output:
	// cookie: TF_PLUGIN_MAGIC_COOKIE
	// protocol versions: [5 6]
}
