package protocli_test

import (
	"fmt"
	"os"

	"github.com/plugkit/plugkit/internal/protocli"
)

// Run checks one release of protocheck's own history against the one
// before it, as "plugkit proto breaking" and plugkit-proto do.
func ExampleRun() {
	code := protocli.Run("plugkit-proto", []string{
		"breaking", "../../protocheck/testdata/history/v1.7",
		"--against", "../../protocheck/testdata/history/v1.6",
		"--use", "FILE", "--buf-compat", "--buf-names",
	}, os.Stdout, os.Stderr)
	fmt.Println("exit status", code)
	// Output:
	// <input>:1:1:Previously present file "admin.proto" was deleted.
	// exit status 100
}
