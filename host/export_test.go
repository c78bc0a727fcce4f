package host

// SetAfterPinCheck installs a hook that runs between the checksum check and
// the exec, for tests that swap the binary in that window.
func SetAfterPinCheck(f func()) { afterPinCheck = f }
