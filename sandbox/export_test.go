package sandbox

// InheritedDir exposes inheritedDir to the tests.
var InheritedDir = inheritedDir

// SysctlDir is where the sandbox reads the kernel's settings.
var SysctlDir = &sysctlDir
