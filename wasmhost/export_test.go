package wasmhost

// Running is how many guests r started that have not ended.
func Running(r *Runtime) int { return int(r.running.Load()) }

// Reads is how many module files r read.
func Reads(r *Runtime) int { return int(r.reads.Load()) }

// Polls is how many times r's running guests waited for input
// (poll_oneoff on their connection).
func Polls(r *Runtime) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for g := range r.guests {
		n += g.polls.Load()
	}
	return n
}

// Restores is how many guests r started from a snapshot.
func Restores(r *Runtime) int { return int(r.restores.Load()) }

// CleanRestores is how many of them started with the module's data-less
// form.
func CleanRestores(r *Runtime) int { return int(r.cleanRestores.Load()) }

// WithoutData is the module with its data segments emptied.
func WithoutData(module []byte) ([]byte, bool) { return withoutData(module) }

// DatalessReady reports whether every data-less form r began compiling
// is compiled.
func DatalessReady(r *Runtime) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.variants {
		select {
		case <-v.ready:
			if v.compiled == nil {
				return false
			}
		default:
			return false
		}
	}
	return len(r.variants) > 0
}

// MappedRestores is how many guests started from a snapshot mapped
// copy-on-write.
func MappedRestores(r *Runtime) int { return int(r.snaps.mapped.Load()) }

// Snapshots is how many snapshots r keeps.
func Snapshots(r *Runtime) int {
	r.snaps.mu.Lock()
	defer r.snaps.mu.Unlock()
	return len(r.snaps.byKey)
}
