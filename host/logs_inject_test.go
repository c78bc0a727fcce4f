package host

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
)

// hostileLogLines are what a plugin writes to forge its host's log: plain
// lines that set the terminal's window title, clear the screen, write the
// clipboard (OSC 52), overtype a line with a carriage return, reverse text
// with a bidi override; and hclog JSON records whose message holds a
// newline followed by a whole forged record.
var hostileLogLines = []string{
	"title \x1b]0;owned\x07 set",
	"clear \x1b[2J\x1b[H screen",
	"clipboard \x1b]52;c;Y3VybCBldmlsLnNofHNo\x07 written",
	"harmless\rINFO all good",
	"reversed \u202eexe.txt\u202c name",
	"c1 \u009b31m control",
	`{"@level":"info","@message":"one\n2026/01/01 00:00:00 ERROR forged record plugin=other","@module":"m"}`,
	`{"@level":"info","@message":"two\u2028three\u0085four"}`,
}

// checkOneRecordEach checks a handler's output for the hostile lines: one
// line of output per record, no control character but the newlines that
// end them, no bidi control.
func checkOneRecordEach(t *testing.T, out string) {
	t.Helper()
	if n := strings.Count(out, "\n"); n != len(hostileLogLines) {
		t.Errorf("%d lines of output for %d records; want one each:\n%s", n, len(hostileLogLines), out)
	}
	for _, line := range strings.SplitAfter(out, "\n") {
		body := strings.TrimSuffix(line, "\n")
		if i := strings.IndexFunc(body, func(r rune) bool { return unicode.IsControl(r) || isBidi(r) || r == '\u2028' || r == '\u2029' }); i >= 0 {
			t.Errorf("the host's log carries the plugin's control character %q raw: %q", []rune(body[i:])[0], body)
		}
	}
}

// TestPluginTextIsEscapedInTheDefaultLogger: with the default logger
// (slog.Default(), which Options.Logger nil means, writing through the
// log package), a plugin's control characters are escaped and each of its
// records is one line of the host's log.
func TestPluginTextIsEscapedInTheDefaultLogger(t *testing.T) {
	var out bytes.Buffer
	flags := log.Flags()
	log.SetOutput(&out)
	defer func() { log.SetOutput(os.Stderr); log.SetFlags(flags) }()
	s := newLogSink(slog.Default().With("plugin", "mine"), "stderr")
	s.Write([]byte(strings.Join(hostileLogLines, "\n") + "\n"))
	checkOneRecordEach(t, out.String())
	for _, l := range s.lastLines() {
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f || isBidi(r) }) {
			t.Errorf("the kept stderr line %q (errors quote it) carries control characters", l)
		}
	}
}

// TestPluginTextIsEscapedInTextAndJSON: the same with slog's text and
// JSON handlers.
func TestPluginTextIsEscapedInTextAndJSON(t *testing.T) {
	for name, h := range map[string]func(io.Writer) slog.Handler{
		"text": func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"json": func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			s := newLogSink(slog.New(h(&out)).With("plugin", "mine"), "stdout")
			s.Write([]byte(strings.Join(hostileLogLines, "\n") + "\n"))
			checkOneRecordEach(t, out.String())
		})
	}
}

// TestPluginFieldsCannotTakeTheHostsKeys: a plugin's JSON record with
// fields named as the host's keys (plugin, level, msg, time, stream,
// truncated) and its own @timestamp makes a host record whose top-level
// keys are each there once, with the host's values: the plugin's name as
// the host calls it, the host's clock.
func TestPluginFieldsCannotTakeTheHostsKeys(t *testing.T) {
	var out bytes.Buffer
	s := newLogSink(slog.New(slog.NewJSONHandler(&out, nil)).With("plugin", "mine"), "stdout")
	s.Write([]byte(`{"@level":"warn","@message":"hello","@timestamp":"2001-02-03T04:05:06.000000Z","plugin":"other","level":"ERROR","msg":"forged","time":"2001-02-03T04:05:06Z","stream":"stderr","truncated":false,"source":"x","module":"fake","key":"v"}` + "\n"))
	line := bytes.TrimSpace(out.Bytes())
	if keys := topLevelKeys(t, line); len(keys) != len(uniq(keys)) {
		t.Errorf("the host's record has duplicate keys %v: %s", keys, line)
	}
	var rec map[string]any
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["plugin"] != "mine" || rec["level"] != "WARN" || rec["msg"] != "hello" || rec["stream"] != "stdout" {
		t.Errorf("the record says plugin=%v level=%v msg=%v stream=%v; want the host's mine WARN hello stdout: %s", rec["plugin"], rec["level"], rec["msg"], rec["stream"], line)
	}
	if ts, _ := time.Parse(time.RFC3339Nano, rec["time"].(string)); time.Since(ts) > time.Hour {
		t.Errorf("the record's time %v is the plugin's, not the host's clock: %s", rec["time"], line)
	}
	if _, ok := rec["truncated"]; ok {
		t.Errorf("a short line is marked truncated: %s", line)
	}
	if !strings.Contains(string(line), `"key":"v"`) || !strings.Contains(string(line), `"plugin":"other"`) {
		t.Errorf("the plugin's own fields are lost: %s", line)
	}
}

// topLevelKeys lists the keys of a JSON object in order, repeats kept.
func topLevelKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", obj)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, k := range s {
		m[k] = true
	}
	return m
}

// isBidi reports the Unicode bidi controls (marks, embeddings, overrides,
// isolates), which reorder the text a terminal shows.
func isBidi(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}
