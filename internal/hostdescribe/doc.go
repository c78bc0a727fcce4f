// Package hostdescribe carries package host's describe-line launch to
// package describe, which owns the catalog's Describe protocol on the
// host side, without making it part of host's exported API. It is
// wiring in grpc-go's manner (google.golang.org/grpc/internal): host
// fills the variable in its init, before any importer of host runs, and
// nothing changes it afterwards.
package hostdescribe
