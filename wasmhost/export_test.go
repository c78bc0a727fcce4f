package wasmhost

// Running is how many guests r started that have not ended.
func Running(r *Runtime) int { return int(r.running.Load()) }
