package registrytest

import (
	"net/http"
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
