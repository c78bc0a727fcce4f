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

// TestPushLogsAsConsume: the stdout the pipe poller reads arrives in
// pieces of any size, cut anywhere; push must log it record for record as
// consume logs the same bytes read from one reader, whatever the pieces:
// lines over maxLogLine in marked pieces, a line cut across pieces whole,
// a last line without a newline at the end, and nothing held beyond one
// line (TestStdioLinesAreCapped checks the records themselves).
func TestPushLogsAsConsume(t *testing.T) {
	input := []byte("first\n" + strings.Repeat("x", maxLogLine+10) + "\nshort\n" +
		strings.Repeat("y", maxLogLine-1) + "\n" + strings.Repeat("z", 2*maxLogLine) + "\n{\"@message\":\"json\"}\nno newline at the end")
	records := func(feed func(*logSink)) string {
		var out bytes.Buffer
		h := slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})
		feed(newLogSink(slog.New(h), "stdout"))
		return out.String()
	}
	want := records(func(s *logSink) { s.consume(bytes.NewReader(input)) })
	if strings.Count(want, "\n") < 8 {
		t.Fatalf("consume logged only:\n%.2000s", want)
	}
	for _, size := range []int{1, 7, 4096, maxLogLine - 1, maxLogLine, maxLogLine + 1, len(input)} {
		got := records(func(s *logSink) {
			var b lineBuf
			for rest := input; len(rest) > 0; {
				n := min(size, len(rest))
				s.push(&b, rest[:n])
				rest = rest[n:]
				if len(b.held) > maxLogLine {
					t.Fatalf("pieces of %d: push holds %d bytes, over a line's %d", size, len(b.held), maxLogLine)
				}
			}
			s.flush(&b)
		})
		if got != want {
			t.Errorf("pieces of %d bytes: push logged %d bytes of records, consume %d; they differ", size, len(got), len(want))
		}
	}
}
