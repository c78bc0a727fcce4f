package wasmhost

// Running is how many guests r started that have not ended.
func Running(r *Runtime) int { return int(r.running.Load()) }

// Reads is how many module files r read.
func Reads(r *Runtime) int { return int(r.reads.Load()) }
