package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxLogLine is the longest stderr line logged as one record; longer
// lines are cut into records of this size, each marked truncated.
const maxLogLine = 64 << 10

// maxStdioMessage is the largest GRPCStdio message the host takes, in
// bytes after decompression. plugkit's plugins send at most 32 KiB of
// output a message, go-plugin's 1 KiB (grpcStdioBuffer in go-plugin
// v1.8.0's grpc_stdio.go). A larger message ends the stream (gRPC
// refuses it before reading its body, or when decompressing it past the
// limit), so the stdio stream costs the host one such message at a time
// and the records of its lines.
const maxStdioMessage = 64 << 10

// stdioEnded logs why the plugin's stdio stream ended, when that is worth
// telling: at WARN for a message over maxStdioMessage, whose output and
// all after it are lost.
func stdioEnded(logger *slog.Logger, err error) {
	switch code := status.Code(err); {
	case code == codes.ResourceExhausted:
		logger.Warn("plugin stdio stream ended: the plugin sent a message over the host's limit; its later stdout and stderr output is lost (plugkit plugins send at most 32 KiB a message: write output in smaller pieces)",
			"limit", maxStdioMessage, "error", err)
	case code != codes.Canceled && code != codes.Unavailable && code != codes.Unimplemented && !errors.Is(err, io.EOF):
		logger.Debug("plugin stdio stream ended", "error", err)
	}
}

// tailLines is how many of the plugin's last stderr lines an error about
// its start carries, each cut to maxTailLine bytes.
const (
	tailLines   = 20
	maxTailLine = 4 << 10
)

// levelTrace is hclog's trace level, below slog.LevelDebug.
const levelTrace = slog.Level(-8)

// fieldsGroup is the group that holds a plugin's own fields in the
// host's records (its hclog JSON fields, @module and @caller among them),
// so that none can take a key of the host's (plugin, level, msg, time,
// stream, or any its logger adds).
const fieldsGroup = "fields"

// logSink turns a plugin's output lines into slog records. It never
// panics and never trusts the input: any bytes make a record.
type logSink struct {
	logger *slog.Logger
	source string // "stderr", "stdout": the stream the lines came from
	// copy, when set, gets every piece consume reads, as read
	// (Command.Output.Stderr); its errors are ignored.
	copy io.Writer

	mu       sync.Mutex
	panicked bool     // after "panic: " every line is an error
	tail     []string // the last tailLines lines
	panic    panicText
}

// maxStackLines bounds the stack a PanicError keeps.
const maxStackLines = 400

// panicText is what the Go runtime wrote about a panic: the message
// lines from "panic: " (or "fatal error: ") to the first goroutine
// header, then that goroutine's stack up to the blank line after it;
// each line cut as the tail's are (maxTailLine).
type panicText struct {
	state   int // 0 nothing seen, 1 in the message, 2 in the stack, 3 done
	message []string
	stack   []string
}

// add takes one raw line (not JSON) of the plugin's stderr, and reports
// whether it began a panic report.
func (p *panicText) add(text string) (began bool) {
	switch {
	case p.state == 0 || p.state == 3:
		if msg, ok := strings.CutPrefix(text, "panic: "); ok {
			*p = panicText{state: 1, message: []string{msg}}
			return true
		} else if strings.HasPrefix(text, "fatal error: ") {
			*p = panicText{state: 1, message: []string{text}}
			return true
		}
	case p.state == 1 && strings.HasPrefix(text, "goroutine ") && strings.HasSuffix(text, ":"):
		p.state, p.stack = 2, []string{text}
	case p.state == 1:
		if strings.TrimSpace(text) != "" && len(p.message) < 20 {
			p.message = append(p.message, strings.TrimSpace(text))
		}
	case p.state == 2 && strings.TrimSpace(text) == "":
		p.state = 3
	case p.state == 2 && len(p.stack) < maxStackLines:
		p.stack = append(p.stack, text)
	}
	return false
}

// panicError is the panic the sink saw, if it saw one with a stack.
func (s *logSink) panicError(name string) *PanicError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panic.state < 2 {
		return nil
	}
	return &PanicError{Name: name, Message: strings.Join(s.panic.message, "\n"), Stack: strings.Join(s.panic.stack, "\n")}
}

func newLogSink(logger *slog.Logger, source string) *logSink {
	return &logSink{logger: logger, source: source}
}

// consume reads r to its end, one record a line, as push logs it.
func (s *logSink) consume(r io.Reader) {
	buf := make([]byte, maxLogLine)
	var b lineBuf
	for {
		n, err := r.Read(buf)
		s.push(&b, buf[:n])
		if err != nil {
			s.flush(&b)
			return
		}
	}
}

// lineBuf holds a line whose end has not come yet, for push.
type lineBuf struct {
	held []byte
	long bool // held continues a line over maxLogLine bytes
}

// push takes the next piece of a stream (read by consume, or by the pipe
// poller) and logs its lines: a line over maxLogLine in pieces marked
// truncated; an unfinished line waits in b, at most maxLogLine bytes, for
// the rest (flush logs it at the end).
func (s *logSink) push(b *lineBuf, p []byte) {
	s.copyOut(p)
	for len(p) > 0 {
		n := len(p)
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			n = i + 1
		}
		n = min(n, maxLogLine-len(b.held))
		b.held = append(b.held, p[:n]...)
		p = p[n:]
		switch {
		case b.held[len(b.held)-1] == '\n':
			s.line(b.held, b.long)
			b.held, b.long = b.held[:0], false
		case len(b.held) == maxLogLine:
			s.line(b.held, true)
			b.held, b.long = b.held[:0], true
		}
	}
}

// flush logs the unfinished line push holds in b, at the stream's end.
func (s *logSink) flush(b *lineBuf) {
	if len(b.held) > 0 {
		s.line(b.held, b.long)
	}
	*b = lineBuf{}
}

// copyOut hands raw bytes to the copy writer, if any.
func (s *logSink) copyOut(p []byte) {
	if s.copy != nil {
		s.copy.Write(p)
	}
}

// Write lets the sink take output as an io.Writer (GRPCStdio chunks, at
// most maxStdioMessage bytes each). Chunks are split into lines as they
// are read, and lines into maxLogLine pieces, as stderr's are; a partial
// last line is logged as it is. It holds nothing of p once it returns:
// each line is handled before the next is looked for.
func (s *logSink) Write(p []byte) (int, error) {
	rest := p
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		truncated := false
		for len(line) > maxLogLine {
			s.line(line[:maxLogLine], true)
			line, truncated = line[maxLogLine:], true
		}
		s.line(line, truncated)
	}
	return len(p), nil
}

func (s *logSink) lastLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}

func (s *logSink) line(raw []byte, truncated bool) {
	text := string(bytes.TrimRight(raw, "\r\n"))
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	kept := escapeText(text)
	if len(kept) > maxTailLine {
		kept = strings.ToValidUTF8(kept[:maxTailLine], "") + "... (cut)"
	}
	s.mu.Lock()
	if strings.HasPrefix(text, "{") {
		// A record of the plugin's logger: the process lives on, and
		// any panic report before it was not a dying runtime's (which
		// stops the world to print it).
		s.panic = panicText{}
	} else if s.panic.add(kept) {
		s.panicked = true
	}
	if text != "" {
		s.tail = append(s.tail, kept)
		if len(s.tail) > tailLines {
			s.tail = s.tail[len(s.tail)-tailLines:]
		}
	}
	panicked := s.panicked
	s.mu.Unlock()
	if text == "" {
		return
	}

	rec := parseLogLine(text)
	if panicked && !rec.json {
		rec.level = slog.LevelError
	}
	if !rec.json && isCookieNotice(text) {
		// The notice a plugin prints for a person who ran it by hand
		// ("not meant to be run by hand ... run plugkit inspect"): for a
		// host it means the cookie was rejected, which the start error
		// already says, so it is no INFO record of the host's.
		rec.level = slog.LevelDebug
	}
	if !s.logger.Enabled(context.Background(), rec.level) {
		return
	}
	// The plugin's text is escaped (a handler may write the message as
	// it is: slog.Default's does), and its fields kept in a group of
	// their own; the host's clock dates the record.
	r := slog.NewRecord(time.Now(), rec.level, escapeText(rec.message), 0)
	if len(rec.attrs) > 0 {
		fields := make([]slog.Attr, len(rec.attrs))
		for i, a := range rec.attrs {
			fields[i] = slog.Any(escapeText(a.Key), escapeValue(a.Value.Any()))
		}
		r.AddAttrs(slog.Attr{Key: fieldsGroup, Value: slog.GroupValue(fields...)})
	}
	if truncated {
		r.AddAttrs(slog.Bool("truncated", true))
	}
	if s.source != "stderr" {
		r.AddAttrs(slog.String("stream", s.source))
	}
	_ = s.logger.Handler().Handle(context.Background(), r)
}

type logRecord struct {
	level   slog.Level
	message string
	attrs   []slog.Attr
	json    bool
}

// parseLogLine reads one line: hclog JSON when it is a JSON object,
// otherwise text with an optional "[LEVEL]" prefix.
func parseLogLine(text string) logRecord {
	rec := logRecord{level: slog.LevelInfo, message: text}
	if strings.HasPrefix(text, "{") {
		var fields map[string]any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if dec.Decode(&fields) == nil {
			rec.json = true
			rec.message = ""
			keys := make([]string, 0, len(fields))
			for k := range fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v := fields[k]
				switch k {
				case "@message":
					rec.message = stringify(v)
				case "@level":
					rec.level = levelOf(stringify(v))
				case "@timestamp":
					// Not the plugin's to set: the host's clock dates
					// its records.
				case "@module":
					rec.attrs = append(rec.attrs, slog.String("module", stringify(v)))
				case "@caller":
					rec.attrs = append(rec.attrs, slog.String("caller", stringify(v)))
				default:
					rec.attrs = append(rec.attrs, slog.Any(strings.TrimPrefix(k, "@"), plain(v)))
				}
			}
			return rec
		}
	}
	for _, p := range []struct {
		prefix string
		level  slog.Level
	}{
		{"[TRACE]", levelTrace}, {"[DEBUG]", slog.LevelDebug}, {"[INFO]", slog.LevelInfo},
		{"[WARN]", slog.LevelWarn}, {"[ERROR]", slog.LevelError}, {"[ERR]", slog.LevelError},
	} {
		if rest, ok := strings.CutPrefix(text, p.prefix); ok {
			rec.level = p.level
			rec.message = strings.TrimSpace(rest)
			break
		}
	}
	return rec
}

// escapeText escapes what a terminal or a log reader would act on in a
// plugin's text: control characters but tab (escape sequences, carriage
// returns, newlines, C1 controls), the line and paragraph separators and
// the bidi controls, each written as Go writes it in a quoted string
// (\x1b, \r, \n, \u0085, \u202e). Each rune takes at most 6 bytes.
func escapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		if !mustEscape(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// needsEscape reports whether s holds a rune mustEscape escapes, looking
// at ASCII a byte at a time.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b < 0x20 && b != '\t' || b == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if mustEscape(r) {
			return true
		}
		i += n
	}
	return false
}

// mustEscape: C0 controls but tab, DEL, C1 controls, the line and
// paragraph separators, and the bidi controls (unicode.Bidi_Control).
func mustEscape(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t'
	case r < 0x7f:
		return false
	case r <= 0x9f, r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Bidi_Control, r)
}

// escapeValue escapes the text of a decoded JSON value: strings, and the
// strings and keys within arrays and objects.
func escapeValue(v any) any {
	switch v := v.(type) {
	case string:
		return escapeText(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = escapeValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[escapeText(k)] = escapeValue(e)
		}
		return out
	}
	return v
}

// stringify renders any JSON value as text: strings as they are, anything
// else (an object as @message, a number as @level) as compact JSON.
func stringify(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}

// plain turns json.Number into a Go number so handlers print it as one.
func plain(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return i
		}
		if f, err := n.Float64(); err == nil {
			return f
		}
		return n.String()
	}
	return v
}

func levelOf(s string) slog.Level {
	switch strings.ToLower(s) {
	case "trace":
		return levelTrace
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error", "err", "fatal":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// isCookieNotice recognises the message plugkit and go-plugin plugins print
// when started without their magic cookie.
func isCookieNotice(line string) bool {
	return strings.Contains(strings.ToLower(line), "not meant to be")
}
