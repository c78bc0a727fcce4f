// Command multiname is a test plugin that serves the objectstore v1 kind
// under two names, "a" and "b", each holding an object "who" whose bytes are
// its own name: a call reaches one of them only through the plugkit-name
// metadata. A Get of "slow" writes the plugin's pid to $MULTINAME_PIDFILE
// and then never answers, for tests that interrupt a call in flight. At
// start it writes its command-line arguments, one a line, to
// $MULTINAME_ARGSFILE when that is set.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
)

func main() {
	if f := os.Getenv("MULTINAME_ARGSFILE"); f != "" {
		os.WriteFile(f, []byte(strings.Join(os.Args[1:], "\n")), 0o644)
	}
	var impls []catalog.Implementation
	for _, name := range []string{"a", "b"} {
		m := backend.NewMemory()
		if err := m.Put("who", []byte(name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		impls = append(impls, catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, name,
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: slowGet{m}}))
	}
	cat, err := catalog.New("1.0.0", impls...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(objectstore.Cookie, cat)
}

// slowGet blocks a Get of "slow" for good.
type slowGet struct{ *backend.Memory }

func (s slowGet) Get(key string) ([]byte, error) {
	if key == "slow" {
		if f := os.Getenv("MULTINAME_PIDFILE"); f != "" {
			os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644)
		}
		select {}
	}
	return s.Memory.Get(key)
}
