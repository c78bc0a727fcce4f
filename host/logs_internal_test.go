package host

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/plugkit/plugkit/handshake"
)

// TestStdioLinesAreCapped: lines arriving over GRPCStdio (chunks up to
// the 64 MiB message limit) are cut like stderr lines, and the kept tail
// stays small, however long the lines.
func TestStdioLinesAreCapped(t *testing.T) {
	var records bytes.Buffer
	s := newLogSink(slog.New(slog.NewJSONHandler(&records, nil)), "stdout")
	// Three lines of 8 MiB are 384 pieces of maxLogLine, many times the
	// tail's tailLines: each cap is passed by far. (Thirty gave the same
	// assertions nothing more and cost ten seconds of CPU under -race.)
	chunk := []byte(strings.Repeat("x", 8<<20) + "\n")
	for range 3 {
		s.Write(chunk)
	}
	total := 0
	for _, l := range s.lastLines() {
		total += len(l)
	}
	if n := len(s.lastLines()); n != tailLines || total > tailLines*(maxTailLine+16) {
		t.Errorf("the tail holds %d lines, %d bytes; want %d lines of at most %d bytes", n, total, tailLines, maxTailLine)
	}
	for _, rec := range bytes.Split(bytes.TrimSpace(records.Bytes()), []byte("\n")) {
		if len(rec) > maxLogLine+512 {
			t.Fatalf("a record of %d bytes; lines must be cut at %d", len(rec), maxLogLine)
		}
	}
	if !bytes.Contains(records.Bytes(), []byte(`"truncated":true`)) {
		t.Error("cut records are not marked truncated")
	}
}

// TestInheritedEnvironment: the handshake variables and the cookie of the
// host's own environment never reach a plugin, and InheritEnv passes only
// what it names.
func TestInheritedEnvironment(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/root", "AWS_SECRET_ACCESS_KEY=s3cret", "PLUGIN_CLIENT_CERT=stale",
		"PLUGKIT_NETWORK=tcp", "PLUGIN_PROTOCOL_VERSIONS=9", "MY_COOKIE=old"}
	cfg := Command{Cookie: handshake.Cookie{Key: "MY_COOKIE", Value: "new"}}
	if got := strings.Join(inherited(cfg, environ), " "); got != "PATH=/bin HOME=/root AWS_SECRET_ACCESS_KEY=s3cret" {
		t.Errorf("default: %s", got)
	}
	cfg.InheritEnv = []string{"PATH", "PLUGIN_CLIENT_CERT"}
	if got := strings.Join(inherited(cfg, environ), " "); got != "PATH=/bin" {
		t.Errorf("InheritEnv [PATH PLUGIN_CLIENT_CERT]: %s", got)
	}
	cfg.InheritEnv = []string{}
	if got := inherited(cfg, environ); len(got) != 0 {
		t.Errorf("empty InheritEnv: %v", got)
	}
}
