package registrytest

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
