package registrytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit/plugkit/internal/testutil"
)

// TestStartServesTheDistributionAPI checks the registry answers the OCI
// distribution API's version check, and asks for credentials when set.
func TestStartServesTheDistributionAPI(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want int
	}{
		{"open", Options{}, http.StatusOK},
		{"htpasswd", Options{Username: "u", Password: "p"}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Start(t, tc.opts)
			resp, err := http.Get(r.URL + "/v2/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /v2/ = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestFrontNamesItselfInLocations checks a registry served through the
// test binary's front (Wrap, TLS) passes each request on and answers with
// upload URLs that name the front, scheme and host, as a client must
// follow them: an upload started through the front is found there.
func TestFrontNamesItselfInLocations(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	tlsCfg := tlsSrv.TLS.Clone()
	tlsClient := tlsSrv.Client()
	tlsSrv.Close()
	for _, tc := range []struct {
		name   string
		tls    *tls.Config
		client *http.Client
	}{
		{"wrapped", nil, http.DefaultClient},
		{"tls", tlsCfg, tlsClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen atomic.Int64
			r := Start(t, Options{TLS: tc.tls, Wrap: func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					seen.Add(1)
					h.ServeHTTP(w, req)
				})
			}})
			resp, err := tc.client.Post(r.URL+"/v2/plugins/x/blobs/uploads/", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusAccepted || !strings.HasPrefix(loc, r.URL+"/v2/plugins/x/blobs/uploads/") {
				t.Fatalf("POST an upload = %d, Location %q; want %d and a URL under %s", resp.StatusCode, loc, http.StatusAccepted, r.URL)
			}
			resp, err = tc.client.Get(loc)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("GET the upload's Location = %d, want %d", resp.StatusCode, http.StatusNoContent)
			}
			if n := seen.Load(); n != 2 {
				t.Fatalf("Wrap saw %d requests, want 2", n)
			}
		})
	}
}

// TestProgramEndingEarlySaysWhy checks that a registry program that ends
// before it serves (here on a flag it does not know) is reported with
// its exit status and its own error, read to the end.
func TestProgramEndingEarlySaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	bin, err := binary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(ctx, t, bin, []string{"-no-such-flag"})
	if err == nil {
		t.Fatal("run with an unknown flag succeeded")
	}
	for _, want := range []string{"ended before it served", "exit status 2", "flag provided but not defined: -no-such-flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run's error does not say %q:\n%v", want, err)
		}
	}
}

// orphanEnv, set, makes TestProgramEndsWithTheTestBinary the copy of the
// test binary that starts a registry and exits without its cleanups.
const orphanEnv = "PLUGKIT_REGISTRYTEST_ORPHAN"

// orphanPrefix starts the line on which that copy says the registry's
// address.
const orphanPrefix = "registry at "

// TestProgramEndsWithTheTestBinary checks that the registry program ends
// with the test binary that started it, even when that one ends without
// its cleanups (killed, or out of time): a copy of this test binary starts
// a registry, says its address and exits at once, and the registry must
// stop serving within stopTimeout (it shuts down within 5 seconds of its
// standard input's end).
func TestProgramEndsWithTheTestBinary(t *testing.T) {
	if os.Getenv(orphanEnv) != "" {
		r := Start(t, Options{})
		fmt.Println(orphanPrefix + r.Host)
		os.Exit(0)
	}
	// The copy's files (the program's build, the blobs' directory) go
	// to a directory of this test's, since it removes none of them.
	dir := testutil.TempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProgramEndsWithTheTestBinary$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanEnv+"=1", "TMPDIR="+dir, "TMP="+dir, "TEMP="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the test binary's copy: %v\n%s%s", err, out, stderr.Bytes())
	}
	var host string
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if a, ok := strings.CutPrefix(sc.Text(), orphanPrefix); ok {
			host = a
		}
	}
	if host == "" {
		t.Fatalf("the test binary's copy did not say its registry's address:\n%s%s", out, stderr.Bytes())
	}
	// Serving is answering the distribution API's version check: another
	// listener that took the port once the registry let it go does not.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(stopTimeout); ; time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get("http://" + host + "/v2/")
		if err != nil {
			return
		}
		resp.Body.Close()
		if resp.Header.Get("Docker-Distribution-Api-Version") == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry program still serves on %s %v after the test binary that started it exited", host, stopTimeout)
		}
	}
}
