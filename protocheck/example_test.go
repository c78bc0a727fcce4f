package protocheck_test

import (
	"context"
	"fmt"
	"os"

	"github.com/plugkit/plugkit/protocheck"
	"github.com/plugkit/plugkit/protocheck/load"
	"github.com/plugkit/plugkit/protocheck/report"
)

// Compare two versions of a schema held in memory (Load reads directories
// and git inputs the same way) and print the findings as buf would.
func ExampleBreaking() {
	ctx := context.Background()
	old, err := load.NewImage(ctx, "v1", map[string][]byte{"store.proto": []byte(`syntax = "proto3";
package store.v1;
message Object {
  string key = 1;
  bytes data = 2;
}
`)}, load.LoadOptions{})
	if err != nil {
		panic(err)
	}
	new, err := load.NewImage(ctx, "v2", map[string][]byte{"store.proto": []byte(`syntax = "proto3";
package store.v1;
message Object {
  string name = 1;
  bytes data = 2;
  // Since: store 1.1
  int64 size = 3;
}
`)}, load.LoadOptions{})
	if err != nil {
		panic(err)
	}
	findings, err := protocheck.Breaking(old, new, protocheck.Options{SinceName: "store"})
	if err != nil {
		panic(err)
	}
	report.Write(os.Stdout, report.FormatText, "", findings)
	fmt.Println("fails:", report.Failing(findings))
	// Output:
	// store.proto:4:10:Field "1" on message "store.v1.Object" was renamed from "key" to "name".
	// 	hint: the binary encoding is unchanged, but generated code and the JSON name change ("key" to "name"); add a new field and deprecate the old one instead (Cosmos ADR-044: fields must not be renamed)
	// fails: true
}
