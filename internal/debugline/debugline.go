package debugline

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/plugkit/plugkit/handshake"
)

// Quote quotes s for a POSIX shell: in single quotes, each single quote
// in s written as '"'"'.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Parse reads what a plugin in debug mode prints: the line
// PLUGKIT_REATTACH='{...}' (or Terraform's TF_REATTACH_PROVIDERS='{...}'),
// quoted for a POSIX shell as plugin.DebugLine writes it (with Quote), or
// the bare JSON object that handshake.ParseReattach reads. Surrounding
// blanks are ignored.
func Parse(line string) (map[string]handshake.Reattach, error) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "{") {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t'\"{") {
			return nil, fmt.Errorf("reattach configuration %q: want the JSON object, or the line the plugin printed in debug mode (PLUGKIT_REATTACH='{...}')", abbreviate(s))
		}
		unq, err := shellUnquote(value)
		if err != nil {
			return nil, fmt.Errorf("reattach configuration: %s: %w", name, err)
		}
		s = unq
	}
	return handshake.ParseReattach([]byte(s))
}

// Only returns the one plugin a reattach configuration names, for a
// host that reattaches to a single plugin.
func Only(rcs map[string]handshake.Reattach) (string, handshake.Reattach, error) {
	if len(rcs) == 1 {
		for name, rc := range rcs {
			return name, rc, nil
		}
	}
	names := make([]string, 0, len(rcs))
	for name := range rcs {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "", handshake.Reattach{}, errors.New("reattach configuration names no plugin: give {\"NAME\":{...}} as the plugin printed it")
	}
	return "", handshake.Reattach{}, fmt.Errorf("reattach configuration names %d plugins (%s): give the entry of one", len(names), strings.Join(names, ", "))
}

// shellUnquote undoes POSIX shell quoting of one word made of
// single-quoted parts, double-quoted parts without expansions, and bare
// text without shell metacharacters (the form '...'"'"'...' included).
func shellUnquote(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", errors.New("unterminated single quote")
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return "", errors.New("unterminated double quote")
			}
			part := s[i+1 : i+1+j]
			if strings.ContainsAny(part, "$`\\") {
				return "", errors.New("double-quoted text with $, ` or \\ is not supported: paste the JSON alone")
			}
			b.WriteString(part)
			i += j + 2
		default:
			if strings.IndexByte(" \t\n;&|<>()$`\\*?[]", c) >= 0 {
				return "", fmt.Errorf("unquoted %q in the value: paste the line as the plugin printed it, or the JSON alone", c)
			}
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
