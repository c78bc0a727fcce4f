package objectstore

import (
	_ "embed"

	"github.com/plugkit/plugkit/compat"
)

//go:embed releases.json
var releasesJSON []byte

// Releases returns the release index of the example plugins: which
// releases exist and which objectstore majors each speaks.
func Releases() *compat.Index {
	ix, err := compat.ParseIndex(releasesJSON)
	if err != nil {
		panic("examples/objectstore/releases.json: " + err.Error())
	}
	return ix
}
