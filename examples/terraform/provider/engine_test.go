//go:build tofu

package main

// The tests against real engines (make test-tofu, which .ci/run runs):
// OpenTofu always, built from internal/tools/tofu, and the Terraform CLI
// when it is on PATH. They are behind the build tag tofu because a cold
// build of OpenTofu costs minutes of both CPUs of a small machine, more
// than all of make test's other compiles; make test-tofu builds it once
// into bin/ first and runs the tests named TestEngine... (name a new one
// so).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// terraformTimeout bounds one engine command.
const terraformTimeout = time.Minute

// An engine is an infrastructure engine binary that loads providers over
// the tfplugin protocols: OpenTofu, always (built from its Go module by
// internal/tools/tofu), and the Terraform CLI when it is on PATH.
type engine struct {
	name string
	path string
}

// engines returns the engines to run the end-to-end tests against, and
// logs which ones run.
func engines(t *testing.T) []engine {
	t.Helper()
	tofu, err := tofuPath()
	if err != nil {
		t.Fatalf("cannot build OpenTofu from internal/tools/tofu: %v", err)
	}
	list := []engine{{"opentofu", tofu}}
	if path, err := exec.LookPath("terraform"); err == nil {
		list = append(list, engine{"terraform", path})
		t.Logf("engines: OpenTofu (%s) and Terraform (%s, found on PATH)", tofu, path)
	} else {
		t.Logf("engines: OpenTofu (%s) only; Terraform is not on PATH, so its run is left out", tofu)
	}
	return list
}

// terraform runs an engine in a private home, data directory and CLI
// configuration that points registry.terraform.io/plugkit/demo at the
// freshly built provider.
type terraform struct {
	t    *testing.T
	name string
	path string
	dir  string // the configuration's directory
	env  []string
}

func newTerraform(t *testing.T, e engine, config string) *terraform {
	t.Helper()
	home := testutil.TempDir(t)
	cli := filepath.Join(home, "dev.tfrc")
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", "registry.terraform.io/plugkit/demo", binDir)
	if err := os.WriteFile(cli, []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "config")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tf := &terraform{t: t, name: e.name, path: e.path, dir: dir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "TOFU_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "DEMO_PROVIDER_DIR=") {
			tf.env = append(tf.env, kv)
		}
	}
	tf.env = append(tf.env, "HOME="+home, "TF_CLI_CONFIG_FILE="+cli, "TF_DATA_DIR="+filepath.Join(home, "data"),
		"TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_INPUT=0")
	tf.write(config)
	return tf
}

func (tf *terraform) write(config string) {
	tf.t.Helper()
	if err := os.WriteFile(filepath.Join(tf.dir, "main.tf"), []byte(config), 0o644); err != nil {
		tf.t.Fatal(err)
	}
}

// run runs terraform with args and returns its output and exit code;
// exit codes other than those in ok fail the test.
func (tf *terraform) run(ok []int, args ...string) (string, int) {
	tf.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), terraformTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tf.path, append(args, "-no-color", "-input=false")...)
	cmd.Dir = tf.dir
	cmd.Env = tf.env
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		tf.t.Fatalf("%s %s: %v", tf.name, strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		tf.t.Fatalf("%s %s: no result within %v\n%s", tf.name, strings.Join(args, " "), terraformTimeout, out)
	}
	tf.t.Logf("%s %s: exit %d in %v", tf.name, strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	if !slices.Contains(ok, code) {
		tf.t.Fatalf("%s %s: exit %d, want %v\n%s", tf.name, strings.Join(args, " "), code, ok, out)
	}
	return string(out), code
}

func itemConfig(dir, name string) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    demo = { source = "registry.terraform.io/plugkit/demo" }
  }
}

provider "demo" {
  dir = %q
}

resource "demo_item" "a" {
  name = %q
}

output "id" {
  value = demo_item.a.id
}
`, dir, name)
}

// TestEngineEndToEnd drives the provider with each real engine (OpenTofu
// always, Terraform when on PATH): plan, apply, a plan without changes, an
// update, drift, destroy.
func TestEngineEndToEnd(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) { endToEnd(t, e) })
	}
}

func endToEnd(t *testing.T, e engine) {
	itemDir := filepath.Join(testutil.TempDir(t), "items")
	tf := newTerraform(t, e, itemConfig(itemDir, "first"))

	out, _ := tf.run([]int{0}, "plan")
	for _, want := range []string{"demo_item.a will be created", `name = "first"`, "id   = (known after apply)", "Plan: 1 to add, 0 to change, 0 to destroy."} {
		if !strings.Contains(out, want) {
			t.Errorf("first plan lacks %q:\n%s", want, out)
		}
	}
	if got := items(t, itemDir); len(got) != 0 {
		t.Errorf("plan created items: %v", got)
	}

	out, _ = tf.run([]int{0}, "apply", "-auto-approve")
	if !strings.Contains(out, "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.") {
		t.Errorf("apply:\n%s", out)
	}
	first := onlyItem(t, itemDir)
	if first.Name != "first" || !validID.MatchString(first.ID) || !strings.Contains(out, `id = "`+first.ID+`"`) {
		t.Errorf("item %+v; apply output:\n%s", first, out)
	}

	out, _ = tf.run([]int{0}, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "No changes.") {
		t.Errorf("second plan is not empty:\n%s", out)
	}

	tf.write(itemConfig(itemDir, "renamed"))
	out, _ = tf.run([]int{0}, "apply", "-auto-approve")
	if !strings.Contains(out, "1 changed") {
		t.Errorf("rename apply:\n%s", out)
	}
	if it := onlyItem(t, itemDir); it != (item{ID: first.ID, Name: "renamed"}) {
		t.Errorf("after rename: %+v, want id %s kept", it, first.ID)
	}

	// Drift: the file is removed behind Terraform's back; refresh notices.
	if err := os.Remove(filepath.Join(itemDir, first.ID+".json")); err != nil {
		t.Fatal(err)
	}
	out, _ = tf.run([]int{2}, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "demo_item.a will be created") {
		t.Errorf("plan after drift:\n%s", out)
	}
	tf.run([]int{0}, "apply", "-auto-approve")
	if it := onlyItem(t, itemDir); it.ID == first.ID || it.Name != "renamed" {
		t.Errorf("recreated item %+v", it)
	}

	out, _ = tf.run([]int{0}, "destroy", "-auto-approve")
	if !strings.Contains(out, "Destroy complete! Resources: 1 destroyed.") {
		t.Errorf("destroy:\n%s", out)
	}
	if got := items(t, itemDir); len(got) != 0 {
		t.Errorf("items left after destroy: %v", got)
	}
}

// TestEngineMissingDir checks the diagnostic a user gets without dir and
// without DEMO_PROVIDER_DIR, from each engine.
func TestEngineMissingDir(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) { missingDir(t, e) })
	}
}

func missingDir(t *testing.T, e engine) {
	tf := newTerraform(t, e, `
terraform {
  required_providers {
    demo = { source = "registry.terraform.io/plugkit/demo" }
  }
}
resource "demo_item" "a" { name = "x" }
`)
	out, _ := tf.run([]int{1}, "plan")
	if !strings.Contains(out, "No item directory") || !strings.Contains(out, DirEnv) {
		t.Errorf("plan without a directory:\n%s", out)
	}
}
