package sandbox

// SysctlDir is where the sandbox reads the kernel's settings.
var SysctlDir = &sysctlDir
