package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/internal/registrytest"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/release"
)

// releaseWork starts a loopback registry and writes a signing key pair
// (demoKeys) into a new work directory: the registry's host, the
// directory, and the private and public key files.
func releaseWork(t *testing.T) (registry, work, keyFile, pubFile string) {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{})
	work = testutil.TempDir(t)
	keyFile, pubFile, err := demoKeys(work)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Host, work, keyFile, pubFile
}

// TestReleasePushInstallLock drives the CLI end to end against a
// loopback registry: push two example plugins as releases signed with a
// PEM key, install by majors and constraint with a lock file, add a
// platform with plugkit lock, reinstall from the lock, and print the
// no-fit message for a major no release speaks.
func TestReleasePushInstallLock(t *testing.T) {
	registry, work, keyFile, pubFile := releaseWork(t)
	src := registry + "/plugins/objectstore"
	const cookie = "PLUGKIT_EXAMPLE_PLUGIN=objectstore"
	for name, v := range map[string]string{"memory": "1.3.0", "fs": "2.1.0"} {
		dist := filepath.Join(work, "dist-"+name)
		goBuild(t, filepath.Join(dist, runtime.GOOS+"_"+runtime.GOARCH), "objectstore-"+name, "../../examples/objectstore/plugins/"+name)
		if err := os.MkdirAll(filepath.Join(dist, "darwin_arm64"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dist, "darwin_arm64", "objectstore-"+name), []byte("darwin build of "+name), 0o755); err != nil {
			t.Fatal(err)
		}
		out := mustRun(t, 0, "release", "push", dist, "--ref", src+":"+v, "--key", keyFile, "--cookie", cookie, "--plain-http")
		if !strings.Contains(out, "pushed "+src+":"+v) || !strings.Contains(out, "signed") {
			t.Errorf("push %s: %s", name, out)
		}
	}
	dir, lockFile := filepath.Join(work, "plugins"), filepath.Join(work, "plugkit.lock")
	common := []string{"--dir", dir, "--key", pubFile, "--cookie", cookie, "--plain-http", "--lock", lockFile}
	out := mustRun(t, 0, append([]string{"install", src, "--kind", "objectstore", "--majors", "1", "--constraint", "~> 1.0"}, common...)...)
	if !strings.Contains(out, "installed "+src+" v1.3.0") || !strings.Contains(out, "locked") {
		t.Errorf("install: %s", out)
	}
	lock, err := release.ReadLock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if lp := lock.Find(src); lp == nil || lp.Version != "1.3.0" || len(lp.Binaries) != 2 || lp.Constraint != "~> 1.0" {
		t.Fatalf("lock file after install:\n%s", lock.Bytes())
	}
	// With the lock, majors 1 and 2 still install the locked 1.3.0.
	out = mustRun(t, 0, append([]string{"install", src, "--kind", "objectstore", "--majors", "1,2"}, common...)...)
	if !strings.Contains(out, "v1.3.0") {
		t.Errorf("install with the lock file: %s", out)
	}
	out = mustRun(t, 1, append([]string{"install", src, "--kind", "objectstore", "--majors", "2"}, common...)...)
	if !strings.Contains(out, "serves objectstore majors [1], and this host speaks [2]") {
		t.Errorf("install of a locked release the host cannot use: %s", out)
	}
	out = mustRun(t, 1, append([]string{"install", src, "--kind", "objectstore", "--majors", "1,2", "--constraint", "~> 2.0"}, common...)...)
	if !strings.Contains(out, `locks, does not meet --constraint "~> 2.0"`) {
		t.Errorf("install of a locked release the constraint excludes: %s", out)
	}
	out = mustRun(t, 0, "lock", "--lock", lockFile, "--key", pubFile, "--plain-http", "--platform", "darwin/arm64")
	if !strings.Contains(out, "locked "+src+" v1.3.0") {
		t.Errorf("lock --platform: %s", out)
	}
	out = mustRun(t, 1, "install", src, "--kind", "objectstore", "--majors", "7", "--dir", testutil.TempDir(t), "--key", pubFile, "--cookie", cookie, "--plain-http")
	for _, want := range []string{"No release of", "v2.1.0 speaks objectstore 2.1, 1.0", "v1.3.0 speaks objectstore 1.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("no-fit message lacks %q:\n%s", want, out)
		}
	}
	// The bounds on a registry's answers are flags: four tags exceed
	// --max-tags 3, and the error says which flag raises it.
	out = mustRun(t, 1, "install", src, "--kind", "objectstore", "--majors", "1", "--max-tags", "3", "--dir", testutil.TempDir(t), "--key", pubFile, "--cookie", cookie, "--plain-http")
	if !strings.Contains(out, src+": its tag list holds more tags") || !strings.Contains(out, "plugkit --max-tags") {
		t.Errorf("install with --max-tags 3 of 4 tags:\n%s", out)
	}
	out = mustRun(t, 1, "install", src, "--kind", "objectstore", "--majors", "2", "--constraint", "~> 1.0", "--dir", testutil.TempDir(t), "--key", pubFile, "--cookie", cookie, "--plain-http")
	if !strings.Contains(out, `version = "~> 2.1.0"`) {
		t.Errorf("constraint no-fit message lacks the constraint that selects 2.1.0:\n%s", out)
	}
	if err := os.WriteFile(lockFile, []byte("lock-version 1\nplugin "+src+"\n\tversion 1.3.0\n\tindex sha256:zz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, 1, append([]string{"install", src, "--kind", "objectstore", "--majors", "1"}, common...)...)
	if !strings.Contains(out, "plugkit.lock:4:") {
		t.Errorf("mangled lock file: %s", out)
	}
}

// TestLockSaysWhatIsWrongWithMajors: plugkit lock of a new SOURCE with
// a --majors list it cannot read says so, rather than asking for the
// --kind and --majors it was given.
func TestLockSaysWhatIsWrongWithMajors(t *testing.T) {
	work := testutil.TempDir(t)
	_, pubFile, err := demoKeys(work)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, 1, "lock", "--lock", filepath.Join(work, "plugkit.lock"), "--key", pubFile, "oci-layout:"+filepath.Join(work, "mirror"), "--kind", "objectstore", "--majors", "one")
	if !strings.Contains(out, "--majors:") || strings.Contains(out, "give --kind and --majors") {
		t.Errorf("lock with --majors one: %s", out)
	}
}

// mustRun runs the CLI in process and checks its exit status.
func mustRun(t *testing.T, want int, args ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	if code := run(args, &stdout, &stderr); code != want {
		t.Fatalf("plugkit %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// TestDemoRelease runs make demo's release part: three releases
// published and signed, installs by constraint, the lock file, and the
// no-fit message.
func TestDemoRelease(t *testing.T) {
	if testutil.UnderWine() {
		t.Skip("the demo builds its plugins with the Go tool, which does not run under Wine")
	}
	out := mustRun(t, 0, "release", "demo")
	for _, want := range []string{"pushed oci-layout:$DEMO/registry/objectstore:3.0.0", "installed oci-layout:$DEMO/registry/objectstore v2.1.0", "binary " + runtime.GOOS + "/" + runtime.GOARCH + " fs sha256:", "v1.3.0 (objectstore majors [1])", "v2.1.0 is the earliest compatible version"} {
		if !strings.Contains(out, want) {
			t.Errorf("release demo output lacks %q:\n%s", want, out)
		}
	}
	// make demo ends here: its last line must say the demo is over, not be
	// the refused install's error text under an exit status of 0.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "release demo done:") {
		t.Errorf("release demo's last line is %q; want the demo's closing line (release demo done: ...)", last)
	}
}
