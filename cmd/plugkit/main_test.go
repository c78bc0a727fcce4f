package main

import (
	"os"
	"testing"

	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
)

// TestMain removes the builds the tests share, and fails the tests when
// they leave files in the temporary directory or processes running
// (testutil.Main).
func TestMain(m *testing.M) {
	os.Exit(testutil.Main(testutil.Then(m, func() {
		if fsModule.dir != "" {
			os.RemoveAll(fsModule.dir)
		}
		if builds.dir != "" {
			os.RemoveAll(builds.dir)
		}
		registrytest.Remove()
	})))
}
