package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// WriteText writes the cells as a table for people, followed by the
// failures and the advice, one block per cell that has any.
func WriteText(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tVERSION\tBINARY\tHOST MAJOR\tMODE\tPASSED\tFAILED")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%s\tv%d\t%s\t%d\t%d\n", c.Plugin, orDash(c.Version), filepath.Base(c.Binary), c.HostMajor, modeText(c), c.Passed, c.Failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cells {
		if len(c.Failures) == 0 && c.Advice == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s %s on host v%d (%s):\n", c.Plugin, orDash(c.Version), c.HostMajor, modeText(c))
		for _, f := range c.Failures {
			fmt.Fprintf(w, "  FAIL %s: %s\n", f.Case, oneLine(f.Error))
		}
		for _, line := range strings.Split(strings.TrimSpace(c.Advice), "\n") {
			if line != "" {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
	}
	return nil
}

// WriteMarkdown writes the cells as a Markdown table, for a CI job's
// summary, with the failures and the advice under it.
func WriteMarkdown(w io.Writer, cells []Cell) error {
	fmt.Fprintln(w, "| plugin | version | binary | host major | mode | passed | failed |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|")
	for _, c := range cells {
		mode := modeText(c)
		if c.Mode == ModeFailing {
			mode = "**" + mode + "**"
		}
		fmt.Fprintf(w, "| `%s` | %s | `%s` | v%d | %s | %d | %d |\n", c.Plugin, orDash(c.Version), filepath.Base(c.Binary), c.HostMajor, mode, c.Passed, c.Failed)
	}
	for _, c := range cells {
		if len(c.Failures) == 0 && c.Advice == "" {
			continue
		}
		fmt.Fprintf(w, "\n**`%s` %s on host v%d** (%s)\n\n", c.Plugin, orDash(c.Version), c.HostMajor, modeText(c))
		for _, f := range c.Failures {
			fmt.Fprintf(w, "- `%s`: %s\n", f.Case, oneLine(f.Error))
		}
		if c.Advice != "" {
			fmt.Fprintf(w, "\n```\n%s\n```\n", strings.TrimSpace(c.Advice))
		}
	}
	return nil
}

// WriteJSON writes the cells as a JSON array with one object per cell:
// plugin, version, binary, host_major, mode, passed, failed, failures
// (case and error), advice, and via for a failing cell.
func WriteJSON(w io.Writer, cells []Cell) error {
	if cells == nil {
		cells = []Cell{}
	}
	out := make([]Cell, len(cells))
	for i, c := range cells {
		if c.Failures == nil {
			c.Failures = []Failure{}
		}
		out[i] = c
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func modeText(c Cell) string {
	if c.Mode == ModeFailing && c.Via != "" {
		return string(c.Mode) + " (" + string(c.Via) + ")"
	}
	return string(c.Mode)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
