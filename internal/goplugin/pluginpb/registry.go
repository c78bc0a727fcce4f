package pluginpb

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Files holds the file descriptors of this package. The generated code
// registers here (see internal/tools/privatize) rather than in
// protoregistry.GlobalFiles, so that a program can link both plugkit and
// hashicorp/go-plugin, whose files declare the same names. Look-ups that
// miss fall back to the global registry, which resolves imports such as
// google/protobuf/empty.proto.
var Files = &localFiles{}

// Types holds the message and enum types of this package, for the same
// reason as Files.
var Types = new(protoregistry.Types)

type localFiles struct {
	protoregistry.Files
}

func (l *localFiles) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if fd, err := l.Files.FindFileByPath(path); err == nil {
		return fd, nil
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

func (l *localFiles) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if d, err := l.Files.FindDescriptorByName(name); err == nil {
		return d, nil
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
