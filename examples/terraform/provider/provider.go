package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// DirEnv names the environment variable that gives the item directory
// when the provider block does not.
const DirEnv = "DEMO_PROVIDER_DIR"

// itemType is the resource type's name.
const itemType = "demo_item"

var (
	providerObject = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"dir": tftypes.String}}
	itemObject     = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"id": tftypes.String, "name": tftypes.String}}
	validID        = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// item is the content of an item's file and the resource's state.
type item struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// provider implements tfprotov6.ProviderServer. Terraform configures it
// once, then calls the resource methods, possibly concurrently.
type provider struct {
	mu  sync.RWMutex
	dir string // set by ConfigureProvider
}

var _ tfprotov6.ProviderServer = (*provider)(nil)

func newProvider() *provider { return &provider{} }

func (p *provider) GetMetadata(context.Context, *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	return &tfprotov6.GetMetadataResponse{
		ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: true},
		Resources:          []tfprotov6.ResourceMetadata{{TypeName: itemType}},
	}, nil
}

func (p *provider) GetProviderSchema(context.Context, *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	return &tfprotov6.GetProviderSchemaResponse{
		ServerCapabilities: &tfprotov6.ServerCapabilities{GetProviderSchemaOptional: true},
		Provider: &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{
			Description: "Keeps demo items as JSON files in a directory.",
			Attributes: []*tfprotov6.SchemaAttribute{{
				Name: "dir", Type: tftypes.String, Optional: true,
				Description: "Directory of the item files; defaults to $" + DirEnv + ".",
			}},
		}},
		ResourceSchemas: map[string]*tfprotov6.Schema{
			itemType: {Block: &tfprotov6.SchemaBlock{
				Description: "An item: the file DIR/ID.json.",
				Attributes: []*tfprotov6.SchemaAttribute{
					{Name: "id", Type: tftypes.String, Computed: true, Description: "Random identifier chosen on create."},
					{Name: "name", Type: tftypes.String, Required: true, Description: "The item's name."},
				},
			}},
		},
		DataSourceSchemas:        map[string]*tfprotov6.Schema{},
		EphemeralResourceSchemas: map[string]*tfprotov6.Schema{},
		Functions:                map[string]*tfprotov6.Function{},
	}, nil
}

func (p *provider) GetResourceIdentitySchemas(context.Context, *tfprotov6.GetResourceIdentitySchemasRequest) (*tfprotov6.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov6.GetResourceIdentitySchemasResponse{IdentitySchemas: map[string]*tfprotov6.ResourceIdentitySchema{}}, nil
}

func (p *provider) ValidateProviderConfig(_ context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	resp := &tfprotov6.ValidateProviderConfigResponse{PreparedConfig: req.Config}
	dir, err := decodeString(req.Config, providerObject, "dir")
	if err != nil {
		resp.Diagnostics = errorDiag("Invalid provider configuration", err.Error(), nil)
	} else if dir.IsKnown() && !dir.IsNull() {
		var s string
		_ = dir.As(&s)
		if s == "" {
			resp.Diagnostics = errorDiag("Empty dir", "The provider attribute dir must name a directory; leave it out to use $"+DirEnv+".", tftypes.NewAttributePath().WithAttributeName("dir"))
		}
	}
	return resp, nil
}

func (p *provider) ConfigureProvider(_ context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	resp := &tfprotov6.ConfigureProviderResponse{}
	v, err := decodeString(req.Config, providerObject, "dir")
	if err != nil {
		resp.Diagnostics = errorDiag("Invalid provider configuration", err.Error(), nil)
		return resp, nil
	}
	var dir string
	if v.IsKnown() && !v.IsNull() {
		_ = v.As(&dir)
	}
	if dir == "" {
		dir = os.Getenv(DirEnv)
	}
	if dir == "" {
		resp.Diagnostics = errorDiag("No item directory",
			"Set the provider attribute dir, or the environment variable "+DirEnv+", to the directory where demo items are kept.",
			tftypes.NewAttributePath().WithAttributeName("dir"))
		return resp, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		resp.Diagnostics = errorDiag("Cannot create the item directory", err.Error(), tftypes.NewAttributePath().WithAttributeName("dir"))
		return resp, nil
	}
	p.mu.Lock()
	p.dir = dir
	p.mu.Unlock()
	return resp, nil
}

func (p *provider) StopProvider(context.Context, *tfprotov6.StopProviderRequest) (*tfprotov6.StopProviderResponse, error) {
	return &tfprotov6.StopProviderResponse{}, nil
}

func (p *provider) ValidateResourceConfig(_ context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp := &tfprotov6.ValidateResourceConfigResponse{}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	name, err := decodeString(req.Config, itemObject, "name")
	if err != nil {
		resp.Diagnostics = errorDiag("Invalid demo_item configuration", err.Error(), nil)
	} else if name.IsKnown() && !name.IsNull() {
		var s string
		_ = name.As(&s)
		if s == "" {
			resp.Diagnostics = errorDiag("Empty name", "A demo_item needs a non-empty name.", tftypes.NewAttributePath().WithAttributeName("name"))
		}
	}
	return resp, nil
}

// UpgradeResourceState passes the stored state through: the schema has
// only ever had version 0.
func (p *provider) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	resp := &tfprotov6.UpgradeResourceStateResponse{}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	if req.RawState == nil {
		resp.UpgradedState = nullState()
		return resp, nil
	}
	v, err := req.RawState.Unmarshal(itemObject)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable demo_item state", err.Error(), nil)
		return resp, nil
	}
	dv, err := tfprotov6.NewDynamicValue(itemObject, v)
	if err != nil {
		resp.Diagnostics = errorDiag("Unencodable demo_item state", err.Error(), nil)
		return resp, nil
	}
	resp.UpgradedState = &dv
	return resp, nil
}

// ReadResource refreshes the state from the item's file; a file that is
// gone makes the state null, so Terraform plans to create the item again.
func (p *provider) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp := &tfprotov6.ReadResourceResponse{Private: req.Private}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	cur, err := decodeItem(req.CurrentState)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable demo_item state", err.Error(), nil)
		return resp, nil
	}
	if cur == nil {
		resp.NewState = nullState()
		return resp, nil
	}
	it, err := p.load(cur.ID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		resp.NewState = nullState()
	case err != nil:
		resp.Diagnostics = errorDiag("Cannot read demo_item "+cur.ID, err.Error(), nil)
	default:
		resp.NewState = encodeItem(it)
	}
	return resp, nil
}

// PlanResourceChange plans a create with an unknown id, keeps the id on
// an update, and passes a destroy (a null proposed state) through.
func (p *provider) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp := &tfprotov6.PlanResourceChangeResponse{PlannedPrivate: req.PriorPrivate}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	proposed, err := req.ProposedNewState.Unmarshal(itemObject)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable proposed demo_item state", err.Error(), nil)
		return resp, nil
	}
	if proposed.IsNull() {
		resp.PlannedState = req.ProposedNewState
		return resp, nil
	}
	var attrs map[string]tftypes.Value
	if err := proposed.As(&attrs); err != nil {
		resp.Diagnostics = errorDiag("Unreadable proposed demo_item state", err.Error(), nil)
		return resp, nil
	}
	prior, err := decodeItem(req.PriorState)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable prior demo_item state", err.Error(), nil)
		return resp, nil
	}
	id := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	if prior != nil {
		id = tftypes.NewValue(tftypes.String, prior.ID)
	}
	planned, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, map[string]tftypes.Value{"id": id, "name": attrs["name"]}))
	if err != nil {
		resp.Diagnostics = errorDiag("Cannot encode the planned demo_item", err.Error(), nil)
		return resp, nil
	}
	resp.PlannedState = &planned
	return resp, nil
}

// ApplyResourceChange writes the item's file on create and update and
// removes it on destroy.
func (p *provider) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	resp := &tfprotov6.ApplyResourceChangeResponse{Private: req.PlannedPrivate}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	planned, err := decodeItemRaw(req.PlannedState)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable planned demo_item state", err.Error(), nil)
		return resp, nil
	}
	prior, err := decodeItem(req.PriorState)
	if err != nil {
		resp.Diagnostics = errorDiag("Unreadable prior demo_item state", err.Error(), nil)
		return resp, nil
	}
	if planned == nil { // destroy
		if prior != nil {
			if err := p.remove(prior.ID); err != nil {
				resp.Diagnostics = errorDiag("Cannot delete demo_item "+prior.ID, err.Error(), nil)
				return resp, nil
			}
		}
		resp.NewState = req.PlannedState
		return resp, nil
	}
	it := item{Name: planned.name}
	if prior != nil {
		it.ID = prior.ID
	} else if it.ID, err = newID(); err != nil {
		resp.Diagnostics = errorDiag("Cannot choose an id", err.Error(), nil)
		return resp, nil
	}
	if err := p.save(it); err != nil {
		resp.Diagnostics = errorDiag("Cannot write demo_item "+it.ID, err.Error(), nil)
		return resp, nil
	}
	resp.NewState = encodeItem(it)
	return resp, nil
}

// ImportResourceState imports an existing item file by its id:
// terraform import demo_item.x ID.
func (p *provider) ImportResourceState(_ context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	resp := &tfprotov6.ImportResourceStateResponse{}
	if d := checkType(req.TypeName); d != nil {
		resp.Diagnostics = d
		return resp, nil
	}
	it, err := p.load(req.ID)
	if err != nil {
		resp.Diagnostics = errorDiag("Cannot import demo_item "+req.ID, err.Error(), nil)
		return resp, nil
	}
	resp.ImportedResources = []*tfprotov6.ImportedResource{{TypeName: itemType, State: encodeItem(it)}}
	return resp, nil
}

func (p *provider) MoveResourceState(context.Context, *tfprotov6.MoveResourceStateRequest) (*tfprotov6.MoveResourceStateResponse, error) {
	return &tfprotov6.MoveResourceStateResponse{Diagnostics: unsupported("Moving resource state")}, nil
}

func (p *provider) UpgradeResourceIdentity(context.Context, *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return &tfprotov6.UpgradeResourceIdentityResponse{Diagnostics: unsupported("Resource identity")}, nil
}

func (p *provider) GenerateResourceConfig(context.Context, *tfprotov6.GenerateResourceConfigRequest) (*tfprotov6.GenerateResourceConfigResponse, error) {
	return &tfprotov6.GenerateResourceConfigResponse{Diagnostics: unsupported("Generating resource configuration")}, nil
}

func (p *provider) ValidateDataResourceConfig(_ context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return &tfprotov6.ValidateDataResourceConfigResponse{Diagnostics: unknownKind("data source", req.TypeName)}, nil
}

func (p *provider) ReadDataSource(_ context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return &tfprotov6.ReadDataSourceResponse{Diagnostics: unknownKind("data source", req.TypeName)}, nil
}

func (p *provider) GetFunctions(context.Context, *tfprotov6.GetFunctionsRequest) (*tfprotov6.GetFunctionsResponse, error) {
	return &tfprotov6.GetFunctionsResponse{Functions: map[string]*tfprotov6.Function{}}, nil
}

func (p *provider) CallFunction(_ context.Context, req *tfprotov6.CallFunctionRequest) (*tfprotov6.CallFunctionResponse, error) {
	return &tfprotov6.CallFunctionResponse{Error: &tfprotov6.FunctionError{Text: fmt.Sprintf("the demo provider has no function %q", req.Name)}}, nil
}

func (p *provider) ValidateEphemeralResourceConfig(_ context.Context, req *tfprotov6.ValidateEphemeralResourceConfigRequest) (*tfprotov6.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov6.ValidateEphemeralResourceConfigResponse{Diagnostics: unknownKind("ephemeral resource", req.TypeName)}, nil
}

func (p *provider) OpenEphemeralResource(_ context.Context, req *tfprotov6.OpenEphemeralResourceRequest) (*tfprotov6.OpenEphemeralResourceResponse, error) {
	return &tfprotov6.OpenEphemeralResourceResponse{Diagnostics: unknownKind("ephemeral resource", req.TypeName)}, nil
}

func (p *provider) RenewEphemeralResource(_ context.Context, req *tfprotov6.RenewEphemeralResourceRequest) (*tfprotov6.RenewEphemeralResourceResponse, error) {
	return &tfprotov6.RenewEphemeralResourceResponse{Diagnostics: unknownKind("ephemeral resource", req.TypeName)}, nil
}

func (p *provider) CloseEphemeralResource(_ context.Context, req *tfprotov6.CloseEphemeralResourceRequest) (*tfprotov6.CloseEphemeralResourceResponse, error) {
	return &tfprotov6.CloseEphemeralResourceResponse{Diagnostics: unknownKind("ephemeral resource", req.TypeName)}, nil
}

// The item files.

func (p *provider) path(id string) (string, error) {
	p.mu.RLock()
	dir := p.dir
	p.mu.RUnlock()
	if dir == "" {
		return "", errors.New("the provider is not configured (Terraform calls ConfigureProvider first)")
	}
	if !validID.MatchString(id) {
		return "", fmt.Errorf("%q is not a demo_item id (16 lower-case hex digits)", id)
	}
	return filepath.Join(dir, id+".json"), nil
}

func (p *provider) load(id string) (item, error) {
	path, err := p.path(id)
	if err != nil {
		return item{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return item{}, err
	}
	var it item
	if err := json.Unmarshal(data, &it); err != nil {
		return item{}, fmt.Errorf("%s: %w", path, err)
	}
	it.ID = id
	return it, nil
}

// save writes the item's file atomically: a temporary file, renamed.
func (p *provider) save(it item) error {
	path, err := p.path(it.ID)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(it, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (p *provider) remove(id string) error {
	path, err := p.path(id)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Encoding and decoding of DynamicValues.

// decodeString returns attribute attr of the object in dv.
func decodeString(dv *tfprotov6.DynamicValue, typ tftypes.Object, attr string) (tftypes.Value, error) {
	null := tftypes.NewValue(tftypes.String, nil)
	if dv == nil {
		return null, nil
	}
	v, err := dv.Unmarshal(typ)
	if err != nil {
		return null, err
	}
	if !v.IsKnown() || v.IsNull() {
		return null, nil
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		return null, err
	}
	return attrs[attr], nil
}

// plannedItem is a planned state, whose id may be unknown.
type plannedItem struct{ name string }

func decodeItemRaw(dv *tfprotov6.DynamicValue) (*plannedItem, error) {
	if dv == nil {
		return nil, nil
	}
	v, err := dv.Unmarshal(itemObject)
	if err != nil || v.IsNull() {
		return nil, err
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		return nil, err
	}
	var name string
	if err := attrs["name"].As(&name); err != nil {
		return nil, fmt.Errorf("name: %w", err)
	}
	return &plannedItem{name: name}, nil
}

// decodeItem decodes a known state; nil means a null state (no item).
func decodeItem(dv *tfprotov6.DynamicValue) (*item, error) {
	if dv == nil {
		return nil, nil
	}
	v, err := dv.Unmarshal(itemObject)
	if err != nil || v.IsNull() {
		return nil, err
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		return nil, err
	}
	var it item
	if err := attrs["id"].As(&it.ID); err != nil {
		return nil, fmt.Errorf("id: %w", err)
	}
	if err := attrs["name"].As(&it.Name); err != nil {
		return nil, fmt.Errorf("name: %w", err)
	}
	return &it, nil
}

func encodeItem(it item) *tfprotov6.DynamicValue {
	dv, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, map[string]tftypes.Value{
		"id":   tftypes.NewValue(tftypes.String, it.ID),
		"name": tftypes.NewValue(tftypes.String, it.Name),
	}))
	if err != nil {
		panic(err) // the value is built to match the type
	}
	return &dv
}

func nullState() *tfprotov6.DynamicValue {
	dv, err := tfprotov6.NewDynamicValue(itemObject, tftypes.NewValue(itemObject, nil))
	if err != nil {
		panic(err)
	}
	return &dv
}

// Diagnostics.

func errorDiag(summary, detail string, attr *tftypes.AttributePath) []*tfprotov6.Diagnostic {
	return []*tfprotov6.Diagnostic{{Severity: tfprotov6.DiagnosticSeverityError, Summary: summary, Detail: detail, Attribute: attr}}
}

func checkType(name string) []*tfprotov6.Diagnostic {
	if name == itemType {
		return nil
	}
	return unknownKind("resource type", name)
}

func unknownKind(kind, name string) []*tfprotov6.Diagnostic {
	return errorDiag("Unknown "+kind, fmt.Sprintf("The demo provider has no %s %q; its only resource type is %s.", kind, name, itemType), nil)
}

func unsupported(what string) []*tfprotov6.Diagnostic {
	return errorDiag(what+" is not supported", "The demo provider does not implement it.", nil)
}
