// Command protoc-gen-plugkit is a protoc and buf plugin that writes a
// plugin kind's Go glue from its protocol files, one protobuf package per
// major: the kind's constants, the host's typed clients, forwarding
// adapters and Open, and the plugin's typed registration. Make it a tool
// of the kind's module (go mod edit -tool
// github.com/plugkit/plugkit/cmd/protoc-gen-plugkit), so that it runs at
// the plugkit version the module requires, and run it from buf.gen.yaml
// with strategy: all so that it sees every major at once:
//
//	plugins:
//	  - local: ["go", "tool", "protoc-gen-plugkit"]
//	    out: .
//	    opt: module=example.com/kv
//	    strategy: all
//
// docs/your-own-kind.md walks through a kind built with it; the rules it
// reads from the protocol files are in package internal/kindgen.
package main

import (
	"google.golang.org/protobuf/compiler/protogen"

	"github.com/plugkit/plugkit/internal/kindgen"
)

func main() {
	protogen.Options{}.Run(kindgen.Generate)
}
