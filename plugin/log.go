package plugin

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
)

// LevelTrace is hclog's trace level, below slog.LevelDebug.
const LevelTrace = slog.Level(-8)

// hclogTime is the timestamp format go-plugin hosts expect.
const hclogTime = "2006-01-02T15:04:05.000000Z07:00"

// processStderr is the plugin process's real standard error. Serve
// redirects os.Stderr to the stdio stream; logs keep going here, where
// the host reads them as log records. syscall.Stderr is 2 on unix and the
// standard error handle on Windows, where 2 is no handle at all.
var processStderr io.Writer = os.NewFile(uintptr(syscall.Stderr), "/dev/stderr")

// NewLogger returns a logger that writes hclog's JSON format to the
// process's standard error, which go-plugin and plugkit hosts turn into
// log records of their own. Records at or above level are written.
func NewLogger(level slog.Leveler) *slog.Logger {
	return slog.New(NewLogHandler(processStderr, level))
}

// NewLogHandler returns a slog handler writing hclog JSON lines to w.
//
// A record logged with a context that carries a span (the ctx of a call,
// when the host traces: logger.InfoContext(ctx, ...)) gets that span's
// trace_id and span_id, so that logs and traces join.
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				if t, ok := a.Value.Any().(time.Time); ok {
					return slog.String("@timestamp", t.Format(hclogTime))
				}
			case slog.LevelKey:
				if l, ok := a.Value.Any().(slog.Level); ok {
					return slog.String("@level", levelName(l))
				}
			case slog.MessageKey:
				a.Key = "@message"
			case "module":
				a.Key = "@module"
			}
			return a
		},
	})}
}

func levelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}

// ParseLevel reads a level name as hclog writes it (trace, debug, info,
// warn, error, off); unknown names are info.
func ParseLevel(s string) slog.Level {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	case "off":
		return slog.Level(100)
	default:
		return slog.LevelInfo
	}
}
