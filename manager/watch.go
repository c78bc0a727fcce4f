package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultPollInterval is how often a source is looked at for changes
// where the system does not report them (Finder.PollInterval).
const DefaultPollInterval = 2 * time.Second

// Watcher is a Source that can tell when what it holds may have
// changed, so that a Manager's Watch refreshes the plugins by itself. A
// Finder's Dirs, Files and RemotesFile are Watchers; a Source of your own
// may be one.
type Watcher interface {
	// Watch reports each change of the source on the channel it returns:
	// a value is sent, without waiting (one pending value stands for any
	// number of changes), once a change is complete (a file renamed into
	// place or closed after writing, one removed). The channel is closed
	// once the watch has stopped, after ctx ends. A nil channel with a nil
	// error says the source never changes by itself. The error is for a
	// source that cannot be watched at all.
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// watchSet is what a source's watch looks at: every file of dirs but
// those whose names start with a dot (Dirs skips them: install stages a
// binary in such a file before renaming it into place), and files; never
// the Finder's own cache files, which Refresh rewrites.
type watchSet struct {
	dirs  []string
	files []string // absolute
	skip  string   // absolute prefix of the cache files; "" for none
}

// watchSet is the set of dirs and files, made absolute.
func (f *Finder) watchSet(dirs, files []string) (watchSet, error) {
	var w watchSet
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return w, err
		}
		w.dirs = append(w.dirs, abs)
	}
	for _, p := range files {
		abs, err := filepath.Abs(p)
		if err != nil {
			return w, err
		}
		w.files = append(w.files, abs)
	}
	for _, d := range w.parents() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a directory")
			}
			return w, fmt.Errorf("manager: cannot watch the plugin directory %s: %w: create it, or name another one", d, err)
		}
	}
	if f.CacheFile != "" {
		if abs, err := filepath.Abs(f.CacheFile); err == nil {
			w.skip = abs
		}
	}
	return w, nil
}

// parents are the directories a notification must be asked of: dirs, and
// those of files, each once.
func (w watchSet) parents() []string {
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, d := range w.dirs {
		add(d)
	}
	for _, p := range w.files {
		add(filepath.Dir(p))
	}
	return out
}

// matters says whether a change of the file name in directory dir is one
// of the set's.
func (w watchSet) matters(dir, name string) bool {
	p := filepath.Join(dir, name)
	if w.skip != "" && strings.HasPrefix(p, w.skip) {
		return false
	}
	for _, f := range w.files {
		if f == p {
			return true
		}
	}
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, d := range w.dirs {
		if d == dir {
			return true
		}
	}
	return false
}

func (s fileSource) Watch(ctx context.Context) (<-chan struct{}, error) {
	w, err := s.f.watchSet(s.dirs, s.files)
	if err != nil {
		return nil, err
	}
	return s.f.watch(ctx, w)
}

// Watch watches the remotes file of RemotesFile; Remotes never changes
// by itself.
func (s remoteSource) Watch(ctx context.Context) (<-chan struct{}, error) {
	if s.file == "" {
		return nil, nil
	}
	w, err := s.f.watchSet(nil, []string{s.file})
	if err != nil {
		return nil, err
	}
	return s.f.watch(ctx, w)
}

// pollInterval is PollInterval or its default.
func (f *Finder) pollInterval() time.Duration {
	if f.PollInterval > 0 {
		return f.PollInterval
	}
	return DefaultPollInterval
}

// stamp is what polling compares of a file.
type stamp struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

// look stamps every file of the set that exists now.
func (w watchSet) look() map[string]stamp {
	out := map[string]stamp{}
	add := func(p string, fi fs.FileInfo) {
		out[p] = stamp{fi.Size(), fi.ModTime(), fi.Mode()}
	}
	for _, d := range w.dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			out[d] = stamp{size: -1} // gone or unreadable: a state of its own
			continue
		}
		for _, e := range entries {
			if !w.matters(d, e.Name()) {
				continue
			}
			if fi, err := e.Info(); err == nil {
				add(filepath.Join(d, e.Name()), fi)
			}
		}
	}
	for _, p := range w.files {
		if fi, err := os.Lstat(p); err == nil {
			add(p, fi)
		}
	}
	return out
}

// startPoll looks at the set now, then polls it on a goroutine of its
// own (see poll).
func startPoll(ctx context.Context, w watchSet, every time.Duration, out chan<- struct{}) {
	now := w.look()
	go poll(ctx, w, every, out, now)
}

// poll looks at the set every interval and reports a change from
// reported (what the set held when the watch began; nil: unknown, so the
// first look is reported) once two looks in a row agree on it: a file
// being written changes between looks, so it is reported after its
// writing ends, at most two intervals after. It closes out when ctx
// ends.
func poll(ctx context.Context, w watchSet, every time.Duration, out chan<- struct{}, reported map[string]stamp) {
	defer close(out)
	last := reported
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := w.look()
		if maps.Equal(now, last) && (reported == nil || !maps.Equal(now, reported)) {
			reported = now
			notify(out)
		}
		last = now
	}
}

// notify sends one value on ch without waiting: one pending value stands
// for any number of changes.
func notify(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// DefaultWatchDebounce is how long the sources must be quiet after a
// change before Watch refreshes (WatchPolicy.Debounce).
const DefaultWatchDebounce = 500 * time.Millisecond

// watchMaxDelay bounds, in Debounces, how long changes that keep coming
// put a refresh off.
const watchMaxDelay = 10

// WatchPolicy says how Manager.Watch refreshes the plugins when a source
// changes. The zero value is the defaults.
type WatchPolicy struct {
	// Debounce is how long the sources must be quiet after a change
	// before the refresh (several plugins installed together are taken
	// in one refresh); changes that keep coming put it off by at most ten
	// Debounces. 0 means DefaultWatchDebounce.
	Debounce time.Duration
	// OnRefresh, when set, gets what each refresh of Watch did: Refresh's
	// results and error. It runs on Watch's goroutine: the next refresh
	// waits for it.
	OnRefresh func([]UpgradeResult, error)
}

func (p WatchPolicy) debounce() time.Duration {
	if p.Debounce > 0 {
		return p.Debounce
	}
	return DefaultWatchDebounce
}

// Watch refreshes the plugins by itself, as Refresh does, each time a
// source of Config.Sources that is a Watcher reports a change (a Finder's
// Dirs, Files and RemotesFile are: `plugkit install` into a watched
// directory is enough), once the sources have been quiet for
// Config.Watch.Debounce. A file being written is not taken before it is
// closed or renamed into place (Linux, through inotify; elsewhere, the
// sources are polled every Finder.PollInterval and a change is taken once
// two looks agree). Its first refresh runs once the watches are in place,
// for what changed since Discover. It returns when ctx ends (ctx's error)
// or the Manager is closed (ErrClosed), once the refresh under way has
// ended and every watch of a source has stopped; at once with the error
// of a source that cannot be watched (a missing directory), or when
// another Watch runs. Run it on a goroutine of its own, after Discover; a
// refresh that fails is logged (and given to Config.Watch.OnRefresh), and
// the watch goes on.
func (m *Manager) Watch(ctx context.Context) error {
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return ErrClosed
	case m.watching:
		m.mu.Unlock()
		return errors.New("manager: Watch is already running: one Watch at a time refreshes the plugins")
	}
	m.watching = true
	stop := m.done
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.watching = false
		m.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changes := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait() // every watch has stopped: its channel is closed
	defer cancel()
	for _, s := range m.cfg.Sources {
		w, ok := s.(Watcher)
		if !ok {
			continue
		}
		ch, err := w.Watch(ctx)
		if err != nil {
			return err
		}
		if ch == nil {
			continue
		}
		wg.Go(func() {
			for range ch {
				notify(changes)
			}
		})
	}
	// What changed between Discover and the watches' start is taken by a
	// first refresh.
	notify(changes)
	return m.watchLoop(ctx, stop, changes)
}

// watchLoop refreshes after changes, debounced, until ctx ends or stop
// is closed.
func (m *Manager) watchLoop(ctx context.Context, stop <-chan struct{}, changes <-chan struct{}) error {
	debounce := m.cfg.Watch.debounce()
	timer := time.NewTimer(debounce)
	timer.Stop()
	defer timer.Stop()
	var first time.Time // of the changes not refreshed yet; zero when none
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrClosed
		case <-changes:
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			timer.Reset(min(debounce, first.Add(watchMaxDelay*debounce).Sub(now)))
		case <-timer.C:
			first = time.Time{}
			results, err := m.Refresh(ctx)
			select {
			case <-stop:
				return ErrClosed // closed meanwhile: no refresh to report
			default:
			}
			if err != nil && ctx.Err() == nil {
				m.cfg.logger().Warn("plugkit: refreshing the plugins after a change failed; the plugins that ran serve on", "error", err)
			}
			if m.cfg.Watch.OnRefresh != nil {
				m.cfg.Watch.OnRefresh(results, err)
			}
		}
	}
}
