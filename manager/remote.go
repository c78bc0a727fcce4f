package manager

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit/plugkit/describe"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
	"github.com/plugkit/plugkit/internal/tlsfiles"
	"github.com/plugkit/plugkit/wire"
)

// Remote is a plugin implementation that runs as a network service (a
// plugin started with PLUGKIT_LISTEN) rather than a binary in a plugin
// directory: (Kind, Name) served at the embedded host.Remote's Endpoints,
// reached with TLS. Discover describes it through its catalog like a
// binary, and Dispense connects to it (host.Dial) instead of launching a
// process, adapters included. Put it in Config.Sources with
// Finder.Remotes.
type Remote struct {
	// Kind and Name are the implementation, as its catalog names it.
	Kind, Name string
	// Remote is where the service is: its Endpoints (HOST:PORT of each
	// replica), Balancing and ReconnectMaxDelay.
	host.Remote
	// TLS is the host's configuration: its client certificate and the
	// service's CA. Nil is allowed for loopback endpoints only (plain
	// text, for trying a plugin out).
	TLS *tls.Config
	// DialOptions are added to the connection's gRPC options (a custom
	// dialer, interceptors).
	DialOptions []grpc.DialOption
}

// endpoints is the entry's Location.String(): its Path in
// Implementation and Info.
func (r Remote) endpoints() string { return strings.Join(r.Endpoints, ",") }

// Remotes is the source of plugin services (see Remote). A Remote that
// cannot be reached when Discover runs is described from the cache of an
// earlier Discover, if any (CacheFile with ".remotes" added).
func (f *Finder) Remotes(rs ...Remote) Source { return remoteSource{f: f, list: rs} }

// RemotesFile is the source of the plugin services a remotes file names
// (see LoadRemotes), read afresh by every Discover.
func (f *Finder) RemotesFile(path string) Source { return remoteSource{f: f, file: path} }

// remoteSource is Remotes and RemotesFile.
type remoteSource struct {
	f    *Finder
	list []Remote
	file string
}

func (s remoteSource) String() string {
	if s.file != "" {
		return "remote plugins of " + s.file
	}
	var eps []string
	for _, r := range s.list {
		eps = append(eps, r.endpoints())
	}
	return "remote plugins at " + strings.Join(eps, "; ")
}

func (s remoteSource) Find(ctx context.Context) ([]Entry, error) {
	rs := s.list
	if s.file != "" {
		var err error
		if rs, err = LoadRemotes(s.file); err != nil {
			return nil, err
		}
	}
	for _, r := range rs {
		if r.Kind == "" || r.Name == "" || len(r.Endpoints) == 0 {
			return nil, fmt.Errorf("manager: remote entry %+v: Kind, Name and Endpoints are required", r)
		}
	}
	return s.f.describeRemotes(ctx, rs), nil
}

func (s remoteSource) Connect(ctx context.Context, e Entry) (*host.Client, error) {
	v, ok := e.Value.(*remoteValue)
	if !ok {
		return nil, fmt.Errorf("manager: %s is not a remote plugin listed by Remotes or RemotesFile", e.Location)
	}
	if c := v.take(); c != nil {
		return c, nil
	}
	return s.f.dialRemote(ctx, v.r, s.f.telemetryOf(e.Description.GetPluginVersion()))
}

// remoteValue is the Value of a remote entry: the entry, and the
// connection kept for its first use (Finder.KeepDescribed).
type remoteValue struct {
	kept
	r Remote
}

// remoteCache serialises the writes of a Finder's remote cache.
type remoteCache struct{ mu sync.Mutex }

// cacheKey names the entry in the remote cache: one service may serve
// several entries.
func (r Remote) cacheKey() string { return r.endpoints() + "#" + r.Kind + "/" + r.Name }

// remoteFile is the JSON form of a remotes file.
type remoteFile struct {
	Remotes []remoteEntry `json:"remotes"`
}

// remoteEntry is one entry of a remotes file.
type remoteEntry struct {
	Kind      string     `json:"kind"`
	Name      string     `json:"name"`
	Endpoints []string   `json:"endpoints"`
	Balancing string     `json:"balancing"`
	TLS       *remoteTLS `json:"tls"`
}

// remoteTLS is an entry's "tls": PEM file names.
type remoteTLS struct {
	CA         string `json:"ca"`
	Cert       string `json:"cert"`
	Key        string `json:"key"`
	ServerName string `json:"server_name"`
}

// LoadRemotes reads a remotes file (the one RemotesFile names):
//
//	{"remotes": [{"kind": "objectstore", "name": "example.com/fs",
//	  "endpoints": ["10.0.0.5:7000", "10.0.0.6:7000"], "balancing": "round_robin",
//	  "tls": {"ca": "ca.crt", "cert": "host.crt", "key": "host.key", "server_name": ""}}]}
//
// Relative file names are relative to the file's directory. "tls" may be
// left out for loopback endpoints only.
func LoadRemotes(path string) ([]Remote, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manager: remotes file: %w", err)
	}
	var rf remoteFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	err = dec.Decode(&rf)
	if err == nil {
		// One object: a second one, or anything after it, is a mistake
		// that would otherwise go unnoticed.
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("more after the JSON object")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("manager: remotes file %s: %w (want {\"remotes\":[{\"kind\":K,\"name\":N,\"endpoints\":[\"HOST:PORT\"],\"tls\":{\"ca\":F,\"cert\":F,\"key\":F}}]})", path, err)
	}
	base := filepath.Dir(path)
	rel := func(f string) string {
		if f == "" || filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(base, f)
	}
	var out []Remote
	for i, e := range rf.Remotes {
		r := Remote{Kind: e.Kind, Name: e.Name, Remote: host.Remote{Endpoints: e.Endpoints, Balancing: e.Balancing}}
		if e.TLS != nil {
			tc, err := tlsfiles.Client(rel(e.TLS.CA), rel(e.TLS.Cert), rel(e.TLS.Key), e.TLS.ServerName)
			if err != nil {
				return nil, fmt.Errorf("manager: remotes file %s, entry %d (%s %q): %w", path, i, e.Kind, e.Name, err)
			}
			r.TLS = tc
		}
		out = append(out, r)
	}
	return out, nil
}

// describeRemotes describes each remote entry through its catalog, in
// parallel. An entry that cannot be reached now is described from the
// cache of an earlier Discover, if any: Dispense connects later. The
// cache file is read for that only when an entry is unreachable
// (saveRemoteCache reads it afresh to merge anyway).
func (f *Finder) describeRemotes(ctx context.Context, rs []Remote) []Entry {
	cache := sync.OnceValue(func() map[string]json.RawMessage { return f.loadRemoteCache(ctx) })
	bins := make([]*Entry, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i] = f.describeRemote(ctx, r, cache)
		}()
	}
	wg.Wait()
	f.saveRemoteCache(ctx, rs, bins)
	out := make([]Entry, len(bins))
	for i, b := range bins {
		out[i] = *b
	}
	return out
}

func (f *Finder) describeRemote(ctx context.Context, r Remote, cache func() map[string]json.RawMessage) *Entry {
	v := &remoteValue{r: r}
	b := &Entry{Location: Location{Origin: OriginRemote, Endpoints: r.Endpoints}, Value: v}
	d, c, err := f.launchDescribe(ctx, r.endpoints(), func(ctx context.Context, tel host.Telemetry) (*catalogv1.DescribeResponse, *host.Client, error) {
		c, err := f.dialRemote(ctx, r, tel)
		return nil, c, err
	})
	if c != nil {
		v.c.Store(c)
	}
	if err != nil {
		if raw, ok := cache()[r.cacheKey()]; ok {
			cd := &catalogv1.DescribeResponse{}
			if protojson.Unmarshal(raw, cd) == nil && describe.Check(cd) == nil {
				f.logger().Warn("plugin service unreachable; using its cached description", "kind", r.Kind, "name", r.Name, "endpoints", r.Endpoints, "error", err)
				d, err = cd, nil
				b.Cached = true
			}
		}
	}
	if err != nil {
		b.Err = err
		return b
	}
	// Only the (kind, name) the entry names is registered from it.
	b.Description = onlyImplementation(d, r.Kind, r.Name)
	if len(b.Description.GetKinds()) == 0 {
		b.Err = fmt.Errorf("its catalog has no %s %q (it serves: %s); fix the remote entry's kind and name", r.Kind, r.Name, describeNames(d))
		b.Description = nil
	}
	return b
}

// onlyImplementation is d reduced to (kind, name).
func onlyImplementation(d *catalogv1.DescribeResponse, kind, name string) *catalogv1.DescribeResponse {
	out := &catalogv1.DescribeResponse{PluginVersion: d.GetPluginVersion()}
	for _, k := range d.GetKinds() {
		if k.GetName() != kind {
			continue
		}
		nk := &catalogv1.Kind{Name: kind}
		for _, maj := range k.GetMajors() {
			if slices.Contains(maj.GetNames(), name) {
				nm := proto.Clone(maj).(*catalogv1.Major)
				nm.Names = []string{name}
				nk.Majors = append(nk.Majors, nm)
			}
		}
		if len(nk.Majors) > 0 {
			out.Kinds = append(out.Kinds, nk)
		}
	}
	return out
}

func describeNames(d *catalogv1.DescribeResponse) string {
	var s []string
	for _, k := range d.GetKinds() {
		for _, maj := range k.GetMajors() {
			for _, n := range maj.GetNames() {
				s = append(s, fmt.Sprintf("%s %q v%d", k.GetName(), n, maj.GetMajor()))
			}
		}
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// dialRemote connects to a remote entry: Finder.Host with the entry's
// own security and dial options; tel is its telemetry (telemetryOf, or
// describeTelemetry when the connection is to describe it).
func (f *Finder) dialRemote(ctx context.Context, r Remote, tel host.Telemetry) (*host.Client, error) {
	opts := f.Host
	opts.Telemetry = tel
	opts.Versions = []int{wire.CatalogProtocolVersion}
	opts.Name = fmt.Sprintf("%s %q at %s", r.Kind, r.Name, r.endpoints())
	opts.Logger = f.logger()
	opts.Security = host.Plaintext()
	if r.TLS != nil {
		opts.Security = host.TLS(r.TLS)
	}
	opts.DialOptions = append(slices.Clip(opts.DialOptions), r.DialOptions...)
	return host.Dial(ctx, r.Remote, opts)
}

// The remote cache sits beside the binaries' cache: CacheFile.remotes,
// mapping each remote entry (cacheKey) to its Describe answer (protobuf
// JSON).
func (f *Finder) remoteCacheFile() string {
	if f.CacheFile == "" {
		return ""
	}
	return f.CacheFile + ".remotes"
}

func (f *Finder) loadRemoteCache(ctx context.Context) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	file := f.remoteCacheFile()
	if file == "" {
		return out
	}
	data, err := readStateFile(ctx, file, "remote plugin cache")
	if errors.Is(err, fs.ErrNotExist) {
		return out
	}
	if err == nil {
		out, err = parseRemoteCache(data)
	}
	if err != nil {
		f.logger().Warn("remote plugin cache ignored; it is rebuilt", "file", file, "error", err)
	}
	return out
}

// parseRemoteCache reads the remote cache's bytes. It always returns a
// map (saveRemoteCache adds to it): the entries, or an empty one with the
// error. A file holding null is no cache, not a nil map.
func parseRemoteCache(data []byte) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return map[string]json.RawMessage{}, err
	}
	if out == nil {
		return map[string]json.RawMessage{}, errors.New("null, not an object")
	}
	return out, nil
}

func (f *Finder) saveRemoteCache(ctx context.Context, rs []Remote, bins []*Entry) {
	file := f.remoteCacheFile()
	if file == "" {
		return
	}
	f.remotes.mu.Lock()
	defer f.remotes.mu.Unlock()
	cache := f.loadRemoteCache(ctx)
	if ctx.Err() != nil {
		// The read may have failed for it: writing what this Discover
		// found alone would drop the other entries.
		return
	}
	changed := false
	for i, b := range bins {
		if b.Description == nil || b.Cached {
			continue
		}
		raw, err := protojson.Marshal(b.Description)
		if err != nil {
			continue
		}
		if key := rs[i].cacheKey(); string(cache[key]) != string(raw) {
			cache[key] = raw
			changed = true
		}
	}
	if !changed {
		return
	}
	data, err := json.MarshalIndent(cache, "", "  ")
	if err == nil {
		err = replaceFile(file, data)
	}
	if err != nil {
		f.logger().Warn("remote plugin cache not saved", "file", file, "error", err)
	}
}
