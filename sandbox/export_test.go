package sandbox

// InheritedDir exposes inheritedDir to the tests.
var InheritedDir = inheritedDir
