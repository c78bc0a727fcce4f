package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/plugkit/plugkit/host"
)

// Origin says which kind of source a plugin comes from, beside its Path in
// Binary, Implementation and Info.
type Origin string

// The origins of plugkit's own sources. A Source of your own may name its
// own origin.
const (
	// OriginDir: a binary in a plugin directory or named by its path
	// (Dirs, Files); Path is the binary's absolute path.
	OriginDir Origin = "dir"
	// OriginRemote: a plugin service (Remotes, RemotesFile); Path is its
	// endpoints, comma-separated.
	OriginRemote Origin = "remote"
	// OriginAttached: a plugin attached in-process (Manager.Attach); Path
	// is its label.
	OriginAttached Origin = "attached"
)

// Source is where a Manager finds plugins, the way a gRPC resolver builder
// is where a channel finds addresses: Dirs and Files for binaries,
// Remotes and RemotesFile for plugin services; Manager.Attach adds plugins
// attached in-process. Discover asks each source of Config.Sources, in
// order, for its plugins; the Manager keeps the registry, the processes,
// the restarts and the cache.
//
// A Source of your own describes its plugins with package describe
// (describe.Run, or describe.Conn over a connection it makes), and
// connects with host.Start or host.Dial.
type Source interface {
	// Find lists the plugins the source holds now, in the order of
	// precedence among them (the first of two with the same (kind, name)
	// wins), each with its Description or with Err saying why it cannot
	// be used. The error is for a source that cannot be looked at at all
	// (an unreadable directory, a malformed remotes file); Discover then
	// fails with it. m is the Manager asking: its Config says how to
	// launch and describe.
	Find(ctx context.Context, m *Manager) ([]Binary, error)
	// Connect starts, or connects to, a plugin that Find listed (b), for
	// use. The Manager calls it again after the plugin's process exits.
	Connect(ctx context.Context, m *Manager, b Binary) (*host.Client, error)
}

// Dirs is the source of the plugin binaries in dirs: every executable in
// each directory, described once (Describe answers are cached by path,
// size, mtime and SHA-256, in Config.CacheFile when set). When two
// binaries implement the same (kind, name), the one in the earlier
// directory wins, and within a directory the lexically first path.
func Dirs(dirs ...string) Source { return fileSource{dirs: dirs} }

// Files is the source of the plugin binaries at paths, in that order of
// precedence, described and cached as Dirs does.
func Files(paths ...string) Source { return fileSource{files: paths} }

// fileSource is Dirs and Files.
type fileSource struct{ dirs, files []string }

func (s fileSource) String() string { return strings.Join(append(s.dirs, s.files...), ", ") }

func (s fileSource) Find(ctx context.Context, m *Manager) ([]Binary, error) {
	if len(s.dirs) == 0 && len(s.files) == 0 {
		return nil, errors.New("manager: Dirs or Files names nothing: name the directories that hold plugins, or the plugin binaries")
	}
	paths, err := binaryPaths(s.dirs, s.files) // discover.go
	if err != nil {
		return nil, err
	}
	return m.describeFiles(ctx, paths), nil
}

func (fileSource) Connect(ctx context.Context, m *Manager, b Binary) (*host.Client, error) {
	return m.start(ctx, b.Path, b.Description.GetPluginVersion(), b.wasm)
}

// Remotes is the source of plugin services (see Remote). A Remote that
// cannot be reached when Discover runs is described from the cache of an
// earlier Discover, if any (Config.CacheFile with ".remotes" added).
func Remotes(rs ...Remote) Source { return remoteSource{list: rs} }

// RemotesFile is the source of the plugin services a remotes file names
// (see LoadRemotes), read afresh by every Discover.
func RemotesFile(path string) Source { return remoteSource{file: path} }

// remoteSource is Remotes and RemotesFile.
type remoteSource struct {
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

func (s remoteSource) Find(ctx context.Context, m *Manager) ([]Binary, error) {
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
	return m.describeRemotes(ctx, rs), nil // remote.go
}

func (remoteSource) Connect(ctx context.Context, m *Manager, b Binary) (*host.Client, error) {
	if b.remote == nil {
		return nil, fmt.Errorf("manager: %s is not a remote plugin listed by Remotes or RemotesFile", b.Path)
	}
	return m.dialRemote(ctx, *b.remote, b.Description.GetPluginVersion()) // remote.go
}

// attachedSource holds the plugins of Manager.Attach: it lists nothing by
// itself, and never restarts a plugin.
type attachedSource struct{}

func (attachedSource) Find(context.Context, *Manager) ([]Binary, error) { return nil, nil }

func (attachedSource) Connect(_ context.Context, _ *Manager, b Binary) (*host.Client, error) {
	return nil, fmt.Errorf("manager: the plugin attached as %s has exited; an attached plugin is never restarted: attach it again to a new Manager", b.Path)
}
