// Command brokenmemory is a deliberately broken release of the memory
// plugin, for the matrix's test: its Get returns other bytes than were
// put (the first byte flipped), which only a conformance suite notices.
package main

import (
	"fmt"
	"os"

	"github.com/plugkit/plugkit/catalog"
	"github.com/plugkit/plugkit/examples/objectstore"
	"github.com/plugkit/plugkit/examples/objectstore/backend"
	objectstorev1 "github.com/plugkit/plugkit/examples/objectstore/gen/objectstore/v1"
)

// corrupt is the memory backend with a Get that lies.
type corrupt struct{ *backend.Memory }

func (c corrupt) Get(key string) ([]byte, error) {
	data, err := c.Memory.Get(key)
	if err != nil || len(data) == 0 {
		return data, err
	}
	out := append([]byte(nil), data...)
	out[0] ^= 0xff
	return out, nil
}

func main() {
	cat, err := catalog.New("1.3.1",
		catalog.Implement[objectstorev1.ObjectStoreServer](objectstore.Kind, 1, 0, "example.com/memory",
			&objectstorev1.ObjectStore_ServiceDesc, backend.V1{B: corrupt{backend.NewMemory()}}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	catalog.Serve(objectstore.Cookie, cat)
}
