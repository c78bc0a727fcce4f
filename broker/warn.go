package broker

import (
	"log/slog"
	"sync"
	"time"
)

// warnEvery is the shortest interval between two records of one kind of
// warning: a peer that provokes thousands a second gets one record per
// interval, which counts the ones suppressed since the last.
const warnEvery = 5 * time.Second

// limitedWarning is one kind of warning, logged at most once per
// warnEvery.
type limitedWarning struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
	total      int
	msg        string
	args       []any // of the last suppressed one, for flush
}

// warn logs msg with args, or counts it when a record of this kind was
// logged less than warnEvery ago.
func (w *limitedWarning) warn(l *slog.Logger, msg string, args ...any) {
	w.mu.Lock()
	w.total++
	now := time.Now()
	if !w.last.IsZero() && now.Sub(w.last) < warnEvery {
		w.suppressed++
		w.msg, w.args = msg, args
		w.mu.Unlock()
		return
	}
	suppressed, total := w.suppressed, w.total
	w.last, w.suppressed, w.msg, w.args = now, 0, "", nil
	w.mu.Unlock()
	l.Warn(msg, append(args, "suppressed_since_last", suppressed, "so_far", total)...)
}

// flush logs the count of the warnings suppressed since the last record,
// if any, with the last one's text.
func (w *limitedWarning) flush(l *slog.Logger) {
	w.mu.Lock()
	suppressed, total, msg, args := w.suppressed, w.total, w.msg, w.args
	w.suppressed, w.msg, w.args = 0, "", nil
	w.mu.Unlock()
	if suppressed > 0 {
		l.Warn(msg, append(args, "suppressed_since_last", suppressed, "so_far", total)...)
	}
}
