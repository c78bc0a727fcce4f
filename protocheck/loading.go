package protocheck

import (
	"context"

	"github.com/plugkit/plugkit/protocheck/load"
)

// Image is a compiled set of .proto files (load.Image).
type Image = load.Image

// File is one compiled .proto file of an Image (load.File).
type File = load.File

// LoadOptions configures Load (load.LoadOptions).
type LoadOptions = load.LoadOptions

// CompileError reports .proto files that do not compile (load.CompileError).
type CompileError = load.CompileError

// CompileProblem is one problem of a CompileError (load.CompileProblem).
type CompileProblem = load.CompileProblem

// MaxFileSize is the largest .proto file Load reads (load.MaxFileSize).
const MaxFileSize = load.MaxFileSize

// Load reads and compiles the .proto files of input (load.Load).
func Load(ctx context.Context, input string, opts LoadOptions) (*Image, error) {
	return load.Load(ctx, input, opts)
}

// LoadPair loads an input and the input it is checked against, sharing
// work between them (load.LoadPair).
func LoadPair(ctx context.Context, input, against string, opts LoadOptions) (cur, old *Image, curErr, oldErr error) {
	return load.LoadPair(ctx, input, against, opts)
}

// NewImage compiles in-memory sources as an Image (load.NewImage).
func NewImage(ctx context.Context, name string, sources map[string][]byte, opts LoadOptions) (*Image, error) {
	return load.NewImage(ctx, name, sources, opts)
}
