// Command wintest runs plugkit's tests as Windows programs under Wine:
// `make test-windows` runs it from the repository's root over every
// package; package patterns run only those (`go run
// ./internal/tools/wintest -run TestX ./wasmhost/`).
//
// It installs nothing. It needs wine (Debian: wine and wine64, Wine 8) and a MinGW
// cross compiler (Debian: gcc-mingw-w64-x86-64), and then:
//
//  1. builds shim/processprng.c into bcryptprimitives.dll (Go 1.22 and
//     later call ProcessPrng from it at start-up; Wine 8 has no such DLL);
//  2. makes a private WINEPREFIX in a temporary directory (WINEDEBUG=-all)
//     and puts the DLL in its system32;
//  3. builds the module's main packages for windows/amd64 into a directory
//     that tests which build a plugin with `go build` copy from instead
//     (testutil.GoBuild, told by PLUGKIT_PREBUILT), since the Go tool does
//     not run under Wine;
//  4. compiles every package's tests for windows/amd64 (go test -c) and
//     runs each binary under Wine in its package's directory, with a
//     timeout per package; the plugins those tests start are the same
//     Windows binaries (tests re-execute themselves) or the prebuilt ones.
//
// It prints every test that does not apply to Windows with its reason (the
// tests that call testutil.NotOnWindows, and those in files whose build
// constraints leave Windows out), the packages left out as a whole with
// theirs, and how many tests ran, passed, failed and were skipped. The
// race detector does not run: on Windows it needs cgo, and so a Windows C
// toolchain for every test binary; the binaries are built without it.
package main
