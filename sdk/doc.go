// Package sdk holds plugkit's SDKs for plugins written in other languages
// (sdk/python, sdk/node) and the Go tests that keep them and their contract,
// docs/other-languages.md, true.
//
// The contract test runs with make test. The SDKs' own tests and the Go
// suites against their example plugins (package sdktest) need the
// languages' runtimes, so they sit behind the sdk build tag and run with
// make test-sdk; the repository's README says what that needs.
package sdk
