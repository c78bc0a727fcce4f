package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLimitedWarning: a burst of one kind of warning gives one record at
// once and, at flush, one more that counts the suppressed ones.
func TestLimitedWarning(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	var w limitedWarning
	for i := range 1000 {
		w.warn(l, "broker: something", "n", i)
	}
	if got := strings.Count(buf.String(), "\n"); got != 1 {
		t.Fatalf("%d records for a burst; want 1:\n%s", got, buf.String())
	}
	w.flush(l)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed_since_last=999") || !strings.Contains(lines[1], "so_far=1000") || !strings.Contains(lines[1], "n=999") {
		t.Errorf("flush: want one record counting the 999 suppressed:\n%s", buf.String())
	}
	w.flush(l)
	if got := strings.Count(buf.String(), "\n"); got != 2 {
		t.Errorf("a second flush with nothing suppressed logged again:\n%s", buf.String())
	}
}
