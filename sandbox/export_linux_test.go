package sandbox

// WithSysctlDir returns r reading the kernel's settings under dir rather
// than /proc/sys.
func WithSysctlDir(r Runner, dir string) Runner {
	r.sysctlDir = dir
	return r
}
