package compat_test

import (
	"fmt"

	"github.com/plugkit/plugkit/compat"
)

func ExampleIndex_Resolve() {
	ix, _ := compat.ParseIndex([]byte(`{"plugins": {"example.com/fs": [
		{"version": "1.4.0", "manifest": {"version": 1, "metadata": {"kinds": {"objectstore": ["1.0"]}}}},
		{"version": "2.0.0", "manifest": {"version": 1, "metadata": {"kinds": {"objectstore": ["2.0"]}}}}]}}`))
	res, _ := ix.Resolve("example.com/fs", compat.Requirement{Kind: "objectstore", Majors: []int{1}})
	fmt.Print(res.Message("2.0.0"))
	// Output:
	// Plugin "example.com/fs" v2.0.0 is not compatible with this host (it needs objectstore major 1).
	// Plugin version v1.4.0 is the latest compatible version. Select it with the following constraint:
	//
	//     version = "~> 1.4.0"
	//
	// Alternatively, upgrade the host for compatibility with newer plugin releases.
}
