package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/reflectcall"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/tfserve"
)

// The binaries TestMain builds once for all tests.
var (
	binDir      string // holds terraform-provider-demo, for dev_overrides
	providerBin string
	plugkitBin  string // where TestInspectShowsProtocol6 builds plugkit
)

const (
	buildTimeout = 3 * time.Minute
	startTimeout = 20 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(buildFirst{m}))
}

// buildFirst builds the provider in the tests' own temporary directory
// (testutil.Main's), then runs the tests.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "tfdemo")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = filepath.Join(dir, "bin")
	providerBin = filepath.Join(binDir, "terraform-provider-demo")
	plugkitBin = filepath.Join(dir, "plugkit")
	if providerBin, err = goBuild(providerBin, "."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return b.m.Run()
}

// goBuild builds the main package pkg into out (the Go tool's build, or
// under make test-windows the one built beforehand) and returns the
// file's path, which on Windows ends in ".exe".
func goBuild(out, pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	return testutil.BuildBinary(ctx, out, pkg)
}

// items returns the items in dir by id.
func items(t *testing.T, dir string) map[string]item {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]item{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var it item
		if err := json.Unmarshal(data, &it); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got[strings.TrimSuffix(filepath.Base(f), ".json")] = it
	}
	return got
}

func onlyItem(t *testing.T, dir string) item {
	t.Helper()
	got := items(t, dir)
	if len(got) != 1 {
		t.Fatalf("want one item file in %s, have %v", dir, got)
	}
	for id, it := range got {
		if it.ID != id {
			t.Errorf("file %s.json holds id %q", id, it.ID)
		}
		return it
	}
	panic("unreachable")
}

func startProvider(t *testing.T, versions []int, env ...string) *host.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path:     providerBin,
		Env:      env,
		Cookie:   tfserve.Cookie,
		Timeouts: host.Timeouts{Start: startTimeout},
	}, host.Options{
		Versions: versions,
		Logger:   slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
	})
	if err != nil {
		t.Fatalf("host.Start with versions %v: %v", versions, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHostNegotiation starts the same binary from hosts offering
// different protocol versions and calls the provider service the
// negotiated version names, through reflection (no tfplugin stubs).
func TestHostNegotiation(t *testing.T) {
	for _, tc := range []struct {
		versions []int
		want     int
	}{{[]int{5}, 5}, {[]int{5, 6}, 6}, {[]int{6}, 6}} {
		t.Run(fmt.Sprint(tc.versions), func(t *testing.T) {
			c := startProvider(t, tc.versions)
			if c.Version() != tc.want || !c.TLS() {
				t.Fatalf("negotiated %d (TLS %v), want %d with AutoMTLS", c.Version(), c.TLS(), tc.want)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rc := reflectcall.New(c.Conn())
			services, err := rc.Services(ctx)
			if err != nil {
				t.Fatal(err)
			}
			other := 11 - tc.want
			if !slices.Contains(services, fmt.Sprintf("tfplugin%d.Provider", tc.want)) || slices.Contains(services, fmt.Sprintf("tfplugin%d.Provider", other)) {
				t.Errorf("services %v: want tfplugin%d.Provider alone", services, tc.want)
			}
			// tfplugin5 names the RPC GetSchema; tfplugin6 GetProviderSchema.
			method := "tfplugin6.Provider/GetProviderSchema"
			if tc.want == 5 {
				method = "tfplugin5.Provider/GetSchema"
			}
			var schema []byte
			err = rc.CallJSON(ctx, method, []byte(`{}`), false, func(b []byte) error {
				schema = b
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(schema), `"demo_item"`) || !strings.Contains(string(schema), `"name":"dir"`) {
				t.Errorf("schema lacks demo_item or the provider's dir:\n%s", schema)
			}
		})
	}
	t.Run("no common version", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		c, err := host.Start(ctx, host.Command{Path: providerBin, Cookie: tfserve.Cookie, Timeouts: host.Timeouts{Start: startTimeout}},
			host.Options{Versions: []int{7}, Logger: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
		if err == nil {
			c.Close()
			t.Fatal("a host offering only 7 started the provider")
		}
		if !strings.Contains(err.Error(), "[7]") {
			t.Errorf("error does not name the versions: %v", err)
		}
	})
}

// TestProtocol5Apply runs create, read and delete through protocol 5
// (tfplugin5, served by downgrading the v6 provider) with a raw host, and
// takes the item directory from DEMO_PROVIDER_DIR.
func TestProtocol5Apply(t *testing.T) {
	itemDir := testutil.TempDir(t)
	c := startProvider(t, []int{5}, DirEnv+"="+itemDir)
	rc := reflectcall.New(c.Conn())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(method, req string) map[string]any {
		t.Helper()
		var resp map[string]any
		err := rc.CallJSON(ctx, "tfplugin5.Provider/"+method, []byte(req), false, func(b []byte) error { return json.Unmarshal(b, &resp) })
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		// Fields at their defaults are in the JSON too: an empty list
		// of diagnostics is none.
		if d, _ := resp["diagnostics"].([]any); len(d) > 0 {
			t.Fatalf("%s: diagnostics %v", method, d)
		}
		return resp
	}
	// DynamicValue.json is bytes: base64 in protobuf JSON.
	dv := func(v any) string {
		b, _ := json.Marshal(v)
		j, _ := json.Marshal(map[string]any{"json": b})
		return string(j)
	}
	call("Configure", // tfplugin5's name for ConfigureProvider
		`{"config":`+dv(map[string]any{"dir": nil})+`}`)
	planned := call("PlanResourceChange", `{"typeName":"demo_item","priorState":`+dv(nil)+`,"proposedNewState":`+dv(map[string]any{"id": nil, "name": "five"})+`,"config":`+dv(map[string]any{"id": nil, "name": "five"})+`}`)
	plannedState, _ := json.Marshal(planned["plannedState"])
	applied := call("ApplyResourceChange", `{"typeName":"demo_item","priorState":`+dv(nil)+`,"plannedState":`+string(plannedState)+`,"config":`+dv(map[string]any{"id": nil, "name": "five"})+`}`)
	it := onlyItem(t, itemDir)
	if it.Name != "five" {
		t.Errorf("item %+v", it)
	}
	newState, _ := json.Marshal(applied["newState"])
	call("ApplyResourceChange", `{"typeName":"demo_item","priorState":`+string(newState)+`,"plannedState":`+dv(nil)+`}`)
	if got := items(t, itemDir); len(got) != 0 {
		t.Errorf("items left after delete: %v", got)
	}
}

// TestInspectShowsProtocol6 runs plugkit inspect on the provider as a
// host offering 5 and 6.
func TestInspectShowsProtocol6(t *testing.T) {
	plugkit, err := goBuild(plugkitBin, "github.com/plugkit/plugkit/cmd/plugkit")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, plugkit, "inspect", providerBin, "--cookie", tfserve.CookieKey+"="+tfserve.CookieValue, "--versions", "5,6", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("plugkit inspect: %v\n%s", err, out)
	}
	var got struct {
		ProtocolVersion int      `json:"protocol_version"`
		TLS             bool     `json:"tls"`
		Services        []string `json:"services"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("plugkit inspect --json: %v\n%s", err, out)
	}
	if got.ProtocolVersion != 6 || !got.TLS || !slices.Contains(got.Services, "tfplugin6.Provider") {
		t.Errorf("inspect: %+v", got)
	}
}
