//go:build tofu

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/debugline"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/tfserve"
)

// debugProvider starts the provider as its author does under a debugger,
// `terraform-provider-demo -debug`, and returns the value of
// TF_REATTACH_PROVIDERS it printed and the running command. The provider
// is interrupted when the test ends.
func debugProvider(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(providerBin, "-debug")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TF_") && !strings.HasPrefix(kv, "PLUGKIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	br := bufio.NewReader(out)
	go func() {
		defer close(lines)
		for {
			l, err := br.ReadString('\n')
			if strings.Contains(l, tfserve.EnvReattachProviders+"='") {
				lines <- l
				break
			}
			if err != nil {
				return
			}
		}
		discardRest(br)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("provider in debug mode after an interrupt: %v\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Error("provider in debug mode still ran 10 s after an interrupt")
		}
	})
	var line string
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("the provider printed no %s line; stderr:\n%s", tfserve.EnvReattachProviders, stderr.String())
		}
		line = l
	case <-time.After(startTimeout):
		t.Fatalf("no %s line within %v", tfserve.EnvReattachProviders, startTimeout)
	}
	if !strings.HasPrefix(line, "\t"+tfserve.EnvReattachProviders+"='") {
		t.Errorf("reattach line %q: want it tab-indented, as terraform-plugin-go prints it", line)
	}
	rcs, err := debugline.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := rcs[Address]
	if !ok || len(rcs) != 1 || rc.Pid != cmd.Process.Pid || !rc.Test || rc.ProtocolVersion != 6 {
		t.Fatalf("reattach configuration %+v: want %s only, served by pid %d at protocol 6 in test mode", rcs, Address, cmd.Process.Pid)
	}
	value, err := json.Marshal(rcs)
	if err != nil {
		t.Fatal(err)
	}
	return string(value), cmd
}

func discardRest(br *bufio.Reader) {
	buf := make([]byte, 4096)
	for {
		if _, err := br.Read(buf); err != nil {
			return
		}
	}
}

// TestEngineReattach drives each engine (OpenTofu always, Terraform when on
// PATH) through TF_REATTACH_PROVIDERS: the provider runs in debug mode,
// started by the test as its author starts it with -debug, and the
// engine's CLI configuration has no way to install or launch it, so every
// call of apply, plan and destroy goes to that one process, which keeps
// running between them.
func TestEngineReattach(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) { reattach(t, e) })
	}
}

func reattach(t *testing.T, e engine) {
	value, cmd := debugProvider(t)
	itemDir := filepath.Join(testutil.TempDir(t), "items")
	tf := newTerraform(t, e, itemConfig(itemDir, "debugged"))
	for _, kv := range tf.env {
		if cli, ok := strings.CutPrefix(kv, "TF_CLI_CONFIG_FILE="); ok {
			// No dev_overrides: the reattached process is the only provider.
			if err := os.WriteFile(cli, []byte("provider_installation {\n  direct {}\n}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tf.env = append(tf.env, tfserve.EnvReattachProviders+"="+value)

	tf.run([]int{0}, "init")
	out, _ := tf.run([]int{0}, "apply", "-auto-approve")
	if !strings.Contains(out, "Apply complete! Resources: 1 added") {
		t.Errorf("apply through the reattached provider:\n%s", out)
	}
	if it := onlyItem(t, itemDir); it.Name != "debugged" {
		t.Errorf("item %+v", it)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the provider in debug mode is gone after %s apply: %v", e.name, err)
	}
	out, _ = tf.run([]int{0}, "plan", "-detailed-exitcode")
	if !strings.Contains(out, "No changes.") {
		t.Errorf("second plan through the same provider process:\n%s", out)
	}
	out, _ = tf.run([]int{0}, "destroy", "-auto-approve")
	if !strings.Contains(out, "Destroy complete! Resources: 1 destroyed.") {
		t.Errorf("destroy:\n%s", out)
	}
	if got := items(t, itemDir); len(got) != 0 {
		t.Errorf("items left after destroy: %v", got)
	}
}
