package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// demoReleases are the example plugins the release demo publishes, with
// the versions their binaries report.
var demoReleases = [][2]string{{"memory", "1.3.0"}, {"fs", "2.1.0"}, {"future", "3.0.0"}}

func runDemoRelease(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("release demo", "plugkit release demo: publish the example plugins as signed releases, install them by constraint, lock them", stderr)
	if _, err := parseArgs(fs, args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := demoRelease(ctx, stdout); err != nil {
		fmt.Fprintf(stderr, "plugkit release demo: %v\n", err)
		return 1
	}
	return 0
}

// demoRelease publishes the example plugins to an OCI image-layout
// directory, which stands in for a registry (plugkit release push takes
// REGISTRY/REPO the same way), then installs and locks them through the
// CLI's own commands.
func demoRelease(ctx context.Context, out io.Writer) error {
	work, err := os.MkdirTemp("", "plugkit-demo-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	step := func(format string, args ...any) {
		fmt.Fprint(out, strings.ReplaceAll(fmt.Sprintf("\n==> "+format+"\n", args...), work, "$DEMO"))
	}
	fmt.Fprintf(out, "$DEMO is %s\n", work)
	key, pub, err := demoKeys(work)
	if err != nil {
		return err
	}
	src := "oci-layout:" + filepath.Join(work, "registry", "objectstore")
	const cookie = "PLUGKIT_EXAMPLE_PLUGIN=objectstore"
	step("building and publishing %d releases of the example plugins to %s, signed with %s", len(demoReleases), src, key)
	for _, r := range demoReleases {
		dist := filepath.Join(work, "dist-"+r[0])
		if _, err := buildPlugin(ctx, out, filepath.Join(dist, runtime.GOOS+"_"+runtime.GOARCH), r[0]); err != nil {
			return err
		}
		if err := demoCLI(out, work, "release", "push", dist, "--ref", src+":"+r[1], "--key", key, "--cookie", cookie); err != nil {
			return err
		}
	}
	lock := filepath.Join(work, "plugkit.lock")
	common := []string{"--key", pub, "--cookie", cookie, "--lock", lock}
	step("a host speaking objectstore majors 1 and 2 installs the newest release for them, with ~> 2.0")
	if err := demoCLI(out, work, append([]string{"install", src, "--kind", "objectstore", "--majors", "1,2", "--constraint", "~> 2.0", "--dir", filepath.Join(work, "host-a")}, common...)...); err != nil {
		return err
	}
	step("the lock file it wrote (commit it)")
	raw, err := os.ReadFile(lock)
	if err != nil {
		return err
	}
	io.WriteString(out, strings.ReplaceAll(string(raw), work, "$DEMO"))
	step("a host speaking only major 1 with ~> 1.0 gets 1.3.0")
	if err := demoCLI(out, work, "install", src, "--kind", "objectstore", "--majors", "1", "--constraint", "~> 1.0", "--dir", filepath.Join(work, "host-b"), "--key", pub, "--cookie", cookie); err != nil {
		return err
	}
	step("a host speaking major 2 that asks for ~> 1.0: no release fits, and the message says which to select")
	err = demoCLI(out, work, "install", src, "--kind", "objectstore", "--majors", "2", "--constraint", "~> 1.0", "--dir", filepath.Join(work, "host-c"), "--key", pub, "--cookie", cookie)
	if err == nil {
		return fmt.Errorf("an incompatible install succeeded")
	}
	// The refusal is the demo's point; say so last, so that the demo does
	// not end on an error text while exiting 0.
	fmt.Fprintf(out, "\nrelease demo done: %d releases published and signed, two hosts installed what fits them, and the install above was refused as expected (%v)\n", len(demoReleases), err)
	return nil
}

// demoCLI runs one plugkit command, echoing it and its output with the
// demo's directory written $DEMO.
func demoCLI(out io.Writer, work string, args ...string) error {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, " ~<>") {
			shown[i] = strconv.Quote(a)
		}
	}
	var buf strings.Builder
	fmt.Fprintf(&buf, "$ plugkit %s\n", strings.Join(shown, " "))
	code := run(args, &buf, &buf)
	io.WriteString(out, strings.ReplaceAll(buf.String(), work, "$DEMO"))
	if code != 0 {
		return fmt.Errorf("plugkit %s: exit status %d", args[0], code)
	}
	return nil
}

// demoKeys writes a fresh signing key pair into dir.
func demoKeys(dir string) (key, pub string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	privPEM, err := cryptoutils.MarshalPrivateKeyToPEM(k)
	if err != nil {
		return "", "", err
	}
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(k.Public())
	if err != nil {
		return "", "", err
	}
	key, pub = filepath.Join(dir, "release.key"), filepath.Join(dir, "release.pub")
	if err := os.WriteFile(key, privPEM, 0o600); err != nil {
		return "", "", err
	}
	return key, pub, os.WriteFile(pub, pubPEM, 0o644)
}
