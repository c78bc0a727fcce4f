// Command hello is the program the tests of GoBuild and GoBuildWasm build.
package main

import "fmt"

func main() {
	fmt.Println("hello from testdata/hello")
}
