package tfserve_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-mux/tf6to5server"
	"go.uber.org/goleak"

	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/reflectcall"
	"github.com/plugkit/plugkit/internal/testutil"
	"github.com/plugkit/plugkit/plugin"
	"github.com/plugkit/plugkit/tfserve"
)

// modeEnv makes the test binary a provider instead of running tests
// (see TestMain): "v6", "v6only", "v5" or "nested".
const modeEnv = "TFSERVE_TEST_PROVIDER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		serveTestProvider(mode)
		return
	}
	goleak.VerifyTestMain(testutil.Tidy(m), goleak.IgnoreTopFunction("github.com/plugkit/plugkit/host.spawner")) // the thread every plugin is forked from
}

// testProvider answers GetProviderSchema; its other methods are never
// called (the embedded interface is nil).
type testProvider struct {
	tfprotov6.ProviderServer
	nested bool
}

func (p testProvider) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	attr := &tfprotov6.SchemaAttribute{Name: "size", Type: tftypes.Number, Required: true}
	if p.nested {
		// Nested attributes exist only in protocol 6.
		attr = &tfprotov6.SchemaAttribute{Name: "tags", Optional: true, NestedType: &tfprotov6.SchemaObject{
			Nesting:    tfprotov6.SchemaObjectNestingModeList,
			Attributes: []*tfprotov6.SchemaAttribute{{Name: "key", Type: tftypes.String, Required: true}},
		}}
	}
	return &tfprotov6.GetProviderSchemaResponse{
		Provider:        &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{}},
		ResourceSchemas: map[string]*tfprotov6.Schema{"test_widget": {Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{attr}}}},
	}, nil
}

func serveTestProvider(mode string) {
	cfg := tfserve.Config{
		Name: "registry.terraform.io/plugkit/test",
		V6:   func() tfprotov6.ProviderServer { return testProvider{nested: mode == "nested"} },
	}
	switch mode {
	case "v6only":
		cfg.V6Only = true
	case "v5":
		v5, err := tf6to5server.DowngradeServer(context.Background(), cfg.V6)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cfg.V6 = nil
		cfg.V5 = func() tfprotov5.ProviderServer { return v5 }
	}
	tfserve.Serve(cfg)
}

func start(t *testing.T, mode string, versions ...int) (*host.Client, error) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := host.Start(ctx, host.Command{
		Path:     exe,
		Env:      []string{modeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"},
		Cookie:   tfserve.Cookie,
		Timeouts: host.Timeouts{Start: 15 * time.Second},
	}, host.Options{
		Versions: versions,
		Logger:   slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
	})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// schema calls the negotiated version's schema RPC through reflection.
func schema(t *testing.T, c *host.Client) string {
	t.Helper()
	method := map[int]string{5: "tfplugin5.Provider/GetSchema", 6: "tfplugin6.Provider/GetProviderSchema"}[c.Version()]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out string
	err := reflectcall.New(c.Conn()).CallJSON(ctx, method, nil, false, func(b []byte) error {
		out = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

func TestNegotiation(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		versions []int
		want     int // 0: no common version
	}{
		{"v6", []int{5, 6}, 6},
		{"v6", []int{5}, 5},
		{"v6", []int{6}, 6},
		{"v6only", []int{5, 6}, 6},
		{"v6only", []int{5}, 0},
		{"v5", []int{5, 6}, 5},
		{"v5", []int{6}, 0},
		{"nested", []int{6, 5}, 6},
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.mode, tc.versions), func(t *testing.T) {
			c, err := start(t, tc.mode, tc.versions...)
			if tc.want == 0 {
				if err == nil {
					t.Fatalf("started with protocol %d", c.Version())
				}
				if !strings.Contains(err.Error(), fmt.Sprint(tc.versions)) {
					t.Errorf("error does not name the host's versions: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version() != tc.want || !c.TLS() {
				t.Fatalf("protocol %d TLS %v, want %d with AutoMTLS", c.Version(), c.TLS(), tc.want)
			}
			if s := schema(t, c); !strings.Contains(s, `"test_widget"`) {
				t.Errorf("schema lacks test_widget: %s", s)
			}
		})
	}
}

// TestNestedAttributesCannotBeDowngraded: a provider that needs protocol
// 6 fails to start for a host offering only 5, and says why.
func TestNestedAttributesCannotBeDowngraded(t *testing.T) {
	_, err := start(t, "nested", 5)
	if err == nil {
		t.Fatal("a provider with nested attributes started as protocol 5")
	}
	t.Log(err)
	for _, want := range []string{"as protocol 5", "offer protocol 6", "NestedType"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestPluginConfig(t *testing.T) {
	v6 := func() tfprotov6.ProviderServer { return testProvider{} }
	v5 := func() tfprotov5.ProviderServer { return nil }
	for _, tc := range []struct {
		name string
		cfg  tfserve.Config
		want []int
		err  string
	}{
		{"v6", tfserve.Config{Name: "x", V6: v6}, []int{5, 6}, ""},
		{"v6 only", tfserve.Config{Name: "x", V6: v6, V6Only: true}, []int{6}, ""},
		{"v5", tfserve.Config{Name: "x", V5: v5}, []int{5}, ""},
		{"both", tfserve.Config{Name: "x", V6: v6, V5: v5}, []int{5, 6}, ""},
		{"no name", tfserve.Config{V6: v6}, nil, "Config.Name is empty"},
		{"no server", tfserve.Config{Name: "x"}, nil, "both nil"},
		{"own cookie", tfserve.Config{Name: "x", V6: v6, Plugin: plugin.Config{Versions: map[int]plugin.Register{}}}, nil, "set by tfserve"},
	} {
		pc, err := tc.cfg.PluginConfig()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []int
		for v := range pc.Versions {
			got = append(got, v)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) || pc.Cookie != tfserve.Cookie {
			t.Errorf("%s: versions %v cookie %v, want %v and Terraform's cookie", tc.name, got, pc.Cookie, tc.want)
		}
	}
}
