package handshake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// VersionError reports that a plugin and its host share no app protocol
// version. It names both sides' versions so the reader knows which to
// upgrade.
type VersionError struct {
	// Plugin is what the plugin supports (as far as the host knows: a
	// go-plugin plugin reveals only the one version it chose).
	Plugin []int
	// Host is what the host offered.
	Host []int
}

// Error names both sides' versions.
func (e *VersionError) Error() string {
	return fmt.Sprintf("incompatible app protocol version: plugin supports %s, host supports %s; upgrade whichever side is older (or pick a plugin release that speaks one of %s)",
		FormatVersions(e.Plugin), FormatVersions(e.Host), FormatVersions(e.Host))
}

// Negotiate picks the highest app protocol version both sides support.
func Negotiate(plugin, host []int) (int, error) {
	best := -1
	for _, v := range plugin {
		if v > best && slices.Contains(host, v) {
			best = v
		}
	}
	if best < 0 {
		return 0, &VersionError{Plugin: sortedCopy(plugin), Host: sortedCopy(host)}
	}
	return best, nil
}

// ParseVersions reads a comma-separated list of versions such as "5,6"
// (the form of PLUGIN_PROTOCOL_VERSIONS). Spaces are allowed; empty
// entries are skipped; duplicates are removed; the result is sorted.
func ParseVersions(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.Atoi(part)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("protocol version %q in %q is not a non-negative integer; write versions as a comma list such as 5,6", part, s)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}

// FormatVersions writes versions as a bracketed list, "[5 6]".
func FormatVersions(vs []int) string {
	return fmt.Sprint(sortedCopy(vs))
}

// joinVersions writes versions as a comma list, "5,6".
func joinVersions(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func sortedCopy(vs []int) []int {
	out := slices.Clone(vs)
	slices.Sort(out)
	return out
}
