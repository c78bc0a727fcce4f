package host

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// recorder is a slog.Handler that keeps every record, at every level.
type recorder struct {
	mu      sync.Mutex
	records []recorded
}

// recorded is a record without its time, which is the clock's for a
// plain line.
type recorded struct {
	level   slog.Level
	message string
	attrs   map[string]string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	out := recorded{level: rec.Level, message: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Value.Kind() == slog.KindGroup {
			for _, f := range a.Value.Group() {
				out.attrs[a.Key+"."+f.Key] = f.Value.String()
			}
			return true
		}
		out.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.records = append(r.records, out)
	r.mu.Unlock()
	return nil
}

// FuzzLogSink feeds a plugin's stderr to the host's log sink. Properties:
// reading the bytes as a stream (stderr) and receiving them as one chunk
// (GRPCStdio) make the same records; every record's message and keys are
// valid UTF-8; there are no more records than lines and pieces of
// over-long lines; the kept tail stays within its bounds.
func FuzzLogSink(f *testing.F) {
	for _, s := range []string{
		"plain line\n[WARN] careful\n[ERROR]  broken  \r\n",
		`{"@level":"debug","@message":"hello","@module":"plugin","@timestamp":"2024-01-02T03:04:05.000006Z","n":1,"big":1e400,"x":{"y":[1,"2",null]}}` + "\n",
		`{"@level":3,"@message":{"a":1},"@timestamp":7}` + "\n" + `{"@message":"no newline"}`,
		"panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n",
		"fatal error: all goroutines are asleep\n",
		"This binary is a plugin. These are not meant to be executed directly.\n",
		"{not json\n{}\n{} trailing\n[TRACE]\n[ERR]x\n",
		"\xff\xfe\n\x00\n\r\n\n",
		// No seed of a line above maxLogLine: the fuzzer spends its time
		// minimising such inputs. TestStdioLinesAreCapped cuts long lines.
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var stream, chunk recorder
		s := newLogSink(slog.New(&stream), "stderr")
		s.consume(bytes.NewReader(data))
		c := newLogSink(slog.New(&chunk), "stderr")
		if n, err := c.Write(data); n != len(data) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(data))
		}
		if !reflect.DeepEqual(stream.records, chunk.records) {
			t.Fatalf("stream and chunk of %q make different records:\n%+v\n%+v", data, stream.records, chunk.records)
		}
		if !reflect.DeepEqual(s.lastLines(), c.lastLines()) {
			t.Fatalf("stream and chunk of %q keep different tails:\n%q\n%q", data, s.lastLines(), c.lastLines())
		}
		pieces := 0
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			pieces += (len(line) + maxLogLine - 1) / maxLogLine
		}
		if len(stream.records) > pieces {
			t.Fatalf("%d records from %d lines and pieces", len(stream.records), pieces)
		}
		for _, r := range stream.records {
			if !utf8.ValidString(r.message) {
				t.Fatalf("record message %q is not UTF-8", r.message)
			}
			for k := range r.attrs {
				if !utf8.ValidString(k) {
					t.Fatalf("record key %q is not UTF-8", k)
				}
			}
		}
		tail := s.lastLines()
		if len(tail) > tailLines {
			t.Fatalf("%d tail lines kept, more than %d", len(tail), tailLines)
		}
		for _, l := range tail {
			if len(l) > maxTailLine+len("... (cut)") || !utf8.ValidString(l) || l == "" {
				t.Fatalf("tail line of %d bytes kept: %q", len(l), l)
			}
		}
	})
}

// FuzzLogLine: a plain line (not a JSON object) is logged as it is, or,
// after a [LEVEL] prefix, at that level without the prefix.
func FuzzLogLine(f *testing.F) {
	for _, s := range []string{"[INFO] x", "[DEBUG]", "[WARN]\t y ", "[ERR]z", "[TRACE] t", "[error] lower", "{", "{}", "{\"@message\":1}", "plain"} {
		f.Add(s)
	}
	prefixes := map[string]slog.Level{"[TRACE]": levelTrace, "[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo,
		"[WARN]": slog.LevelWarn, "[ERROR]": slog.LevelError, "[ERR]": slog.LevelError}
	f.Fuzz(func(t *testing.T, text string) {
		rec := parseLogLine(text)
		if rec.json {
			if !strings.HasPrefix(text, "{") {
				t.Fatalf("parseLogLine(%q) took a line that is no JSON object for hclog JSON", text)
			}
			return
		}
		wantLevel, wantMessage := slog.LevelInfo, text
		for p, l := range prefixes {
			// [ERROR] and [ERR] share a prefix; the longer one wins.
			if rest, ok := strings.CutPrefix(text, p); ok && (p != "[ERR]" || !strings.HasPrefix(text, "[ERROR]")) {
				wantLevel, wantMessage = l, strings.TrimSpace(rest)
			}
		}
		if rec.level != wantLevel || rec.message != wantMessage || len(rec.attrs) != 0 {
			t.Fatalf("parseLogLine(%q) = %v %q %v, want %v %q", text, rec.level, rec.message, rec.attrs, wantLevel, wantMessage)
		}
	})
}

// FuzzHclogLine: what a plugin's hclog writes in JSON (the format
// go-plugin's plugins log in) becomes a record with the plugin's level,
// message, module and fields (in the group "fields", control characters
// escaped), whatever their text.
func FuzzHclogLine(f *testing.F) {
	f.Add("hello", 2, "plugin.sub", "key", "value")
	f.Add("multi\nline \"quoted\" \t", 5, "", "n", "")
	f.Add("", 1, "m", "@message", "spoof")
	f.Add("[ERROR] not a prefix", 3, "{}", "timestamp", "2024-01-02T03:04:05Z")
	f.Add("\u2028<&>", 4, "é", "é", "\x00")
	f.Fuzz(func(t *testing.T, msg string, level int, module, key, value string) {
		for _, s := range []string{msg, module, key, value} {
			if !utf8.ValidString(s) {
				return // hclog writes text; encoding/json replaces the rest
			}
		}
		if key == "" || strings.HasPrefix(key, "@") || key == "module" {
			return // hclog's own fields, which a plugin does not pass
		}
		levels := []struct {
			h hclog.Level
			s slog.Level
		}{{hclog.Trace, levelTrace}, {hclog.Debug, slog.LevelDebug}, {hclog.Info, slog.LevelInfo}, {hclog.Warn, slog.LevelWarn}, {hclog.Error, slog.LevelError}}
		lv := levels[(level%len(levels)+len(levels))%len(levels)]
		var out bytes.Buffer
		hclog.New(&hclog.LoggerOptions{Name: module, Level: hclog.Trace, Output: &out, JSONFormat: true}).Log(lv.h, msg, key, value)
		if bytes.Count(out.Bytes(), []byte("\n")) != 1 {
			t.Fatalf("hclog wrote %q, not one line", out.Bytes())
		}
		var got recorder
		newLogSink(slog.New(&got), "stderr").consume(&out)
		if len(got.records) != 1 {
			t.Fatalf("hclog's line made %d records: %+v", len(got.records), got.records)
		}
		r := got.records[0]
		if r.level != lv.s || r.message != escapeText(msg) || r.attrs["fields."+escapeText(key)] != escapeText(value) {
			t.Fatalf("hclog %v %q %s=%q made %v %q %v", lv.h, msg, key, value, r.level, r.message, r.attrs)
		}
		if module != "" && r.attrs["fields.module"] != escapeText(module) {
			t.Fatalf("hclog module %q made %v", module, r.attrs)
		}
		if _, cut := r.attrs["truncated"]; cut {
			t.Fatalf("a short line marked truncated: %v", r.attrs)
		}
	})
}
