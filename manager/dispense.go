package manager

import (
	"context"
	"fmt"
	"go.opentelemetry.io/otel/attribute"
	"slices"
	"sort"
	"strings"

	"github.com/plugkit/plugkit/compat"
	catalogv1 "github.com/plugkit/plugkit/gen/plugkit/catalog/v1"
)

// Info describes what a dispensed client is connected to.
type Info struct {
	Kind, Name    string
	PluginVersion string
	// Path and Origin say where the plugin is (see Binary).
	Path   string
	Origin Origin
	// Major is the major the client speaks; Minor and Capabilities are
	// what the plugin offers of it.
	Major        int
	Minor        int
	Capabilities []string
	// Adapted is set when Major is not the host's latest.
	Adapted bool
}

// Has reports whether the plugin announced a capability.
func (i Info) Has(capability string) bool { return slices.Contains(i.Capabilities, capability) }

// Majors maps each major version of a kind that the host can use to the
// function that builds the host's client type T from a connection to it.
// The highest major is the host's latest interface; functions for older
// majors are adapters that present the older API as T.
type Majors[T any] map[int]func(conn *Conn, info Info) (T, error)

// Dispense returns a T for the implementation (kind, name), built from the
// highest major both the host (majors) and the plugin speak. When there is
// none, the error (an *IncompatibleError) names the plugin, both sides'
// versions and, when Config.Releases knows the plugin, the release to pick.
func Dispense[T any](ctx context.Context, m *Manager, kind, name string, majors Majors[T]) (_ T, err error) {
	var zero T
	_, end := m.span(ctx, "plugkit.dispense", attribute.String("plugkit.kind", kind), attribute.String("plugkit.name", name))
	defer func() { end(err) }()
	im, err := m.Lookup(kind, name)
	if err != nil {
		return zero, err
	}
	hostMajors := make([]int, 0, len(majors))
	for v := range majors {
		hostMajors = append(hostMajors, v)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(hostMajors)))
	var chosen *catalogv1.Major
	for _, hm := range hostMajors {
		for _, pm := range im.Majors {
			if int(pm.GetMajor()) == hm {
				chosen = pm
				break
			}
		}
		if chosen != nil {
			break
		}
	}
	if chosen == nil {
		return zero, m.incompatible(im, hostMajors)
	}
	p, err := m.process(im)
	if err != nil {
		return zero, err
	}
	conn := &Conn{p: p, name: name, kind: kind, major: chosen}
	p.connsMu.Lock()
	p.conns[conn] = struct{}{}
	p.connsMu.Unlock()
	info := Info{
		Kind: kind, Name: name, PluginVersion: im.PluginVersion, Path: im.Path, Origin: im.Origin,
		Major: int(chosen.GetMajor()), Minor: int(chosen.GetMinor()), Capabilities: chosen.GetCapabilities(),
		Adapted: int(chosen.GetMajor()) != hostMajors[0],
	}
	return majors[info.Major](conn, info)
}

// IncompatibleError reports a plugin that speaks no major of a kind that
// the host speaks.
type IncompatibleError struct {
	Kind, Name    string
	Path          string
	PluginVersion string
	// PluginMajors are "MAJOR.MINOR" strings; HostMajors plain majors.
	PluginMajors []string
	HostMajors   []int
	// Advice is the release resolver's suggestion, if any.
	Advice string
}

// Error names the plugin, both sides' versions and the advice.
func (e *IncompatibleError) Error() string {
	hm := slices.Clone(e.HostMajors)
	sort.Ints(hm)
	msg := fmt.Sprintf("plugin %s %q v%s (%s) speaks %s %s; this host speaks %s majors %v",
		e.Kind, e.Name, e.PluginVersion, e.Path, e.Kind, strings.Join(e.PluginMajors, ", "), e.Kind, hm)
	if e.Advice != "" {
		return msg + "\n" + e.Advice
	}
	return msg + "; install a release of the plugin that speaks one of the host's majors, or upgrade the host"
}

func (m *Manager) incompatible(im Implementation, hostMajors []int) error {
	e := &IncompatibleError{Kind: im.Kind, Name: im.Name, Path: im.Path, PluginVersion: im.PluginVersion, HostMajors: hostMajors}
	for _, pm := range im.Majors {
		e.PluginMajors = append(e.PluginMajors, fmt.Sprintf("%d.%d", pm.GetMajor(), pm.GetMinor()))
	}
	if m.cfg.Releases != nil {
		if res, err := m.cfg.Releases.Resolve(im.Name, compat.Requirement{Kind: im.Kind, Majors: hostMajors}); err == nil {
			e.Advice = res.Message(im.PluginVersion)
		}
	}
	return e
}
