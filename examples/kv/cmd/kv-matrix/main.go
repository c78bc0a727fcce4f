// Command kv-matrix runs kv's compatibility matrix: kv-matrix --dir DIR.
package main

import (
	"example.com/kv"
	kvv1 "example.com/kv/gen/kv/v1"
	kvv2 "example.com/kv/gen/kv/v2"
	"github.com/plugkit/plugkit/conformance"
)

func main() {
	conformance.Main(conformance.Matrix{Kind: kvv2.Kind, Cookie: kvv2.Cookie, Hosts: []conformance.Host{
		conformance.HostMajor(kv.SuiteV2(), kvv2.Majors(kv.Adapters)), // the v2 host, with its adapter
		conformance.HostMajor(kv.SuiteV1(), kvv1.Majors()),            // the v1 host
	}})
}
