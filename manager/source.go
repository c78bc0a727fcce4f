package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
	"github.com/plugkit/plugkit/host"
)

// Origin says which kind of source a plugin comes from, in its Location.
type Origin string

// The origins of plugkit's own sources. A Source of your own may name its
// own origin.
const (
	// OriginDir: a binary in a plugin directory or named by its path
	// (Finder.Dirs, Finder.Files); Location.Path is its absolute path.
	OriginDir Origin = "dir"
	// OriginRemote: a plugin service (Finder.Remotes, Finder.RemotesFile);
	// Location.Endpoints are its endpoints.
	OriginRemote Origin = "remote"
	// OriginAttached: a plugin attached in-process (Manager.Attach);
	// Location.Path is its label.
	OriginAttached Origin = "attached"
)

// Location says where a plugin is: a file (Path), a plugin service
// (Endpoints) or an attached plugin (Path, its label).
type Location struct {
	Origin Origin
	// Path is a binary's absolute path, or an attached plugin's label;
	// empty for a plugin service.
	Path string
	// Endpoints are a plugin service's HOST:PORT, one per replica.
	Endpoints []string
}

// String is the Path, or the endpoints separated by commas: what
// Implementation.Path and Info.Path hold, and what errors name.
func (l Location) String() string {
	if len(l.Endpoints) > 0 {
		return strings.Join(l.Endpoints, ",")
	}
	return l.Path
}

// Entry is one plugin a Source found, with its description or the reason
// it cannot be used.
type Entry struct {
	Location
	// Size, ModTime and SHA256 are a binary's, when the plugin is a file.
	Size    int64
	ModTime time.Time
	SHA256  string
	// Description is what the plugin's Catalog/Describe answered; nil
	// when Err is set.
	Description *catalogv1.DescribeResponse
	// Err says why the plugin cannot be used.
	Err error
	// Cached is set when Description came from a cache, without
	// launching or dialling the plugin.
	Cached bool
	// Value is the source's own, opaque to the Manager: the Source that
	// listed the entry gets it back in Connect. When the Manager no
	// longer needs an entry (the next Discover, or Close), it closes a
	// Value that has a Close() error method (a process kept from Find
	// for the plugin's first use, say).
	Value any
}

// Source is where a Manager finds plugins, the way a gRPC resolver builder
// is where a channel finds addresses: a Finder's Dirs and Files for
// binaries, its Remotes and RemotesFile for plugin services, or a Source
// of your own; Manager.Attach adds plugins attached in-process. Discover
// asks each source of Config.Sources, in order, for its plugins; the
// Manager keeps the registry, the processes and the restarts.
//
// A Source of your own lists its plugins however it likes, and describes
// and starts them with a Finder (Finder.Describe, Finder.Start), which
// brings the describe cache, pins and the describe-line fast path; or it
// describes them with package describe (describe.Run, or describe.Conn
// over a connection it makes) and connects with host.Start or host.Dial.
// See the example of Source.
type Source interface {
	// Find lists the plugins the source holds now, in the order of
	// precedence among them (the first of two with the same (kind, name)
	// wins), each with its Description or with Err saying why it cannot
	// be used. The error is for a source that cannot be looked at at all
	// (an unreadable directory, a malformed remotes file); Discover then
	// fails with it.
	Find(ctx context.Context) ([]Entry, error)
	// Connect starts, or connects to, a plugin that Find listed (e), for
	// use. The Manager calls it again after the plugin's process exits.
	// It must start what e describes: Finder.Start checks e.SHA256 on
	// the file it executes; a *host.ChecksumError whose Want is e.SHA256
	// tells the Manager the file changed since (it then refuses the
	// restart, see EventRestartRefused).
	Connect(ctx context.Context, e Entry) (*host.Client, error)
}

// attachedSource holds the plugins of Manager.Attach: it lists nothing by
// itself, and never restarts a plugin.
type attachedSource struct{}

func (attachedSource) Find(context.Context) ([]Entry, error) { return nil, nil }

func (attachedSource) Connect(_ context.Context, e Entry) (*host.Client, error) {
	return nil, fmt.Errorf("manager: the plugin attached as %s has exited; an attached plugin is never restarted: attach it again to a new Manager", e.Path)
}
