package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/plugkit/plugkit/internal/testutil"
)

func dynamic(t *testing.T, typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

func providerConfig(t *testing.T, dir any) *tfprotov6.DynamicValue {
	return dynamic(t, providerObject, tftypes.NewValue(providerObject, map[string]tftypes.Value{"dir": tftypes.NewValue(tftypes.String, dir)}))
}

func configured(t *testing.T, dir string) *provider {
	t.Helper()
	p := newProvider()
	resp, err := p.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{Config: providerConfig(t, dir)})
	if err != nil || len(resp.Diagnostics) != 0 {
		t.Fatalf("ConfigureProvider: %v %v", err, resp.Diagnostics)
	}
	return p
}

func summaries(diags []*tfprotov6.Diagnostic) string {
	var s []string
	for _, d := range diags {
		s = append(s, d.Summary+": "+d.Detail)
	}
	return strings.Join(s, "; ")
}

func TestConfigureFromEnvironment(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "from-env")
	t.Setenv(DirEnv, dir)
	p := newProvider()
	resp, _ := p.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{Config: providerConfig(t, nil)})
	if len(resp.Diagnostics) != 0 || p.dir != dir {
		t.Fatalf("dir %q, diagnostics %s", p.dir, summaries(resp.Diagnostics))
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("directory not created: %v", err)
	}
	t.Setenv(DirEnv, "")
	resp, _ = newProvider().ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{Config: providerConfig(t, nil)})
	if !strings.Contains(summaries(resp.Diagnostics), "No item directory") {
		t.Errorf("without dir and %s: %s", DirEnv, summaries(resp.Diagnostics))
	}
}

func TestValidateResourceConfig(t *testing.T) {
	p := newProvider()
	for name, want := range map[any]string{"ok": "", "": "Empty name", tftypes.UnknownValue: ""} {
		cfg := dynamic(t, itemObject, tftypes.NewValue(itemObject, map[string]tftypes.Value{
			"id": tftypes.NewValue(tftypes.String, nil), "name": tftypes.NewValue(tftypes.String, name)}))
		resp, _ := p.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: itemType, Config: cfg})
		if got := summaries(resp.Diagnostics); !strings.Contains(got, want) || (want == "" && got != "") {
			t.Errorf("name %v: %q, want %q", name, got, want)
		}
	}
	resp, _ := p.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "demo_other"})
	if got := summaries(resp.Diagnostics); !strings.Contains(got, `no resource type "demo_other"`) {
		t.Errorf("unknown type: %s", got)
	}
}

func TestReadImportAndUpgrade(t *testing.T) {
	dir := testutil.TempDir(t)
	p := configured(t, dir)
	it := item{ID: "0123456789abcdef", Name: "kept"}
	if err := p.save(it); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	imp, _ := p.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: itemType, ID: it.ID})
	if len(imp.ImportedResources) != 1 {
		t.Fatalf("import: %s", summaries(imp.Diagnostics))
	}
	got, err := decodeItem(imp.ImportedResources[0].State)
	if err != nil || *got != it {
		t.Errorf("imported %+v %v", got, err)
	}
	bad, _ := p.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: itemType, ID: "../etc/passwd"})
	if !strings.Contains(summaries(bad.Diagnostics), "not a demo_item id") {
		t.Errorf("import of a bad id: %s", summaries(bad.Diagnostics))
	}

	up, _ := p.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{TypeName: itemType, RawState: &tfprotov6.RawState{JSON: []byte(`{"id":"0123456789abcdef","name":"kept"}`)}})
	if got, err := decodeItem(up.UpgradedState); err != nil || got == nil || *got != it {
		t.Errorf("upgrade: %+v %v %s", got, err, summaries(up.Diagnostics))
	}

	read, _ := p.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: itemType, CurrentState: encodeItem(item{ID: it.ID, Name: "stale"})})
	if got, err := decodeItem(read.NewState); err != nil || got == nil || *got != it {
		t.Errorf("read: %+v %v", got, err)
	}
	os.Remove(filepath.Join(dir, it.ID+".json"))
	read, _ = p.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: itemType, CurrentState: encodeItem(it)})
	if null, err := read.NewState.IsNull(); err != nil || !null || len(read.Diagnostics) != 0 {
		t.Errorf("read of a removed item: null %v %v %s", null, err, summaries(read.Diagnostics))
	}
}
