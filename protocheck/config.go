package protocheck

import "github.com/plugkit/plugkit/protocheck/bufconfig"

// BufConfig is an input's buf configuration (bufconfig.Config).
type BufConfig = bufconfig.Config

// BufModule is one module of a BufConfig (bufconfig.Module).
type BufModule = bufconfig.Module

// BufBreaking is a module's breaking configuration (bufconfig.Breaking).
type BufBreaking = bufconfig.Breaking

// Names of buf's configuration files that Load honours.
const (
	BufYAML     = bufconfig.BufYAML     // a module (v1beta1, v1) or a workspace of modules (v2)
	BufWorkYAML = bufconfig.BufWorkYAML // a v1 workspace: directories that each hold a module
	BufLock     = bufconfig.BufLock     // the pinned commits of a buf.yaml's deps
)
