package wasmhost

import (
	"context"
	"encoding/binary"

	"github.com/tetratelabs/wazero"
)

// Running is how many guests r started that have not ended.
func Running(r *Runtime) int { return int(r.running.Load()) }

// Compiling is how many compiles r has under way, abandoned ones (past
// their timeout, or their caller's context) included.
func Compiling(r *Runtime) int { return int(r.compiling.Load()) }

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

// SnapshotKeys are the arguments and environments of the snapshots r
// keeps, each string after its length (newSnapKey).
func SnapshotKeys(r *Runtime) []string {
	r.snaps.mu.Lock()
	defer r.snaps.mu.Unlock()
	var keys []string
	for k := range r.snaps.byKey {
		keys = append(keys, k.argsEnv)
	}
	return keys
}

// InstantiatePlain runs the module in the file at path, compiled by r, as
// plain wazero runs a module: with mc alone (its _start at instantiation),
// none of a guest's connection, grants or stop switch.
func InstantiatePlain(ctx context.Context, r *Runtime, path string, mc wazero.ModuleConfig) error {
	compiled, err := r.compileFile(ctx, path)
	if err != nil {
		return err
	}
	mod, err := r.rt.InstantiateModule(ctx, compiled, mc.WithName(""))
	if mod != nil {
		mod.Close(context.Background())
	}
	return err
}

// WithLongerData is module with one zero byte added to the end of its
// first data segment; false when it has none or cannot be read. It is
// another module (other bytes, compiled on its own) that runs the same:
// the byte lands in memory that is zero at the start, or that a later
// segment writes over; and its data-less form (withoutData) is module's,
// so that one compile of that form serves both.
func WithLongerData(module []byte) ([]byte, bool) {
	if len(module) < 8 {
		return nil, false
	}
	r := reader{b: module, pos: 8}
	for !r.done() {
		start, id, body := r.section()
		if r.err != nil {
			return nil, false
		}
		if id != 11 { // not the data section
			continue
		}
		sr := reader{b: body}
		if sr.u32() == 0 || !sr.dataSegmentHead() {
			return nil, false
		}
		head := sr.pos
		content := sr.bytes(int(sr.u32()))
		if sr.err != nil {
			return nil, false
		}
		sec := append(binary.AppendUvarint(append([]byte(nil), body[:head]...), uint64(len(content)+1)), content...)
		sec = append(append(sec, 0), body[sr.pos:]...)
		out := binary.AppendUvarint(append(append([]byte(nil), module[:start]...), 11), uint64(len(sec)))
		return append(append(out, sec...), module[r.pos:]...), true
	}
	return nil, false
}
