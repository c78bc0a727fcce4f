"""The descriptor pool: message classes, services and reflection's index.

Every .proto file the plugin serves is added here as a serialized
FileDescriptorProto (the SDK's own from _descriptors, a kind's from its
author's module, both made by `go run ./sdk/cmd/descriptors` or protoc's
--descriptor_set_out): nothing is generated at run time.
"""

import os
import sys
import threading

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from . import _descriptors


class Method:
    """One RPC of a service, as its FileDescriptorProto says."""

    def __init__(self, service, proto):
        self.name = proto.name
        self.full_name = "/%s/%s" % (service, proto.name)
        self.input_type = proto.input_type.lstrip(".")
        self.output_type = proto.output_type.lstrip(".")
        self.client_streaming = proto.client_streaming
        self.server_streaming = proto.server_streaming


class Registry:
    """The files added so far, their messages' classes, their services,
    and for reflection the file that defines each symbol."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pool = descriptor_pool.DescriptorPool()
        self._factory = None
        self.files = {}  # path -> serialized FileDescriptorProto
        self.deps = {}  # path -> imported paths
        self.symbols = {}  # full symbol name -> path
        self.services = {}  # full service name -> [Method]
        self._classes = {}

    def add(self, serialized_files):
        """Adds serialized FileDescriptorProtos, each after its imports;
        a file already added is skipped."""
        with self._lock:
            for raw in serialized_files:
                fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
                if fdp.name in self.files:
                    continue
                for dep in fdp.dependency:
                    if dep not in self.files:
                        raise ValueError("%s imports %s, which was not added before it" % (fdp.name, dep))
                self._pool.AddSerializedFile(raw)
                self.files[fdp.name] = raw
                self.deps[fdp.name] = list(fdp.dependency)
                self._index(fdp)

    def _index(self, fdp):
        prefix = fdp.package + "." if fdp.package else ""

        def messages(msgs, scope):
            for m in msgs:
                name = scope + m.name
                self.symbols[name] = fdp.name
                for e in m.enum_type:
                    self.symbols[name + "." + e.name] = fdp.name
                messages(m.nested_type, name + ".")

        messages(fdp.message_type, prefix)
        for e in fdp.enum_type:
            self.symbols[prefix + e.name] = fdp.name
        for s in fdp.service:
            name = prefix + s.name
            self.symbols[name] = fdp.name
            self.services[name] = [Method(name, m) for m in s.method]
            for m in s.method:
                self.symbols[name + "." + m.name] = fdp.name

    def message(self, full_name):
        """Returns the class of a message type, such as
        "objectstore.v1.PutRequest"."""
        with self._lock:
            cls = self._classes.get(full_name)
            if cls is None:
                desc = self._pool.FindMessageTypeByName(full_name)
                get = getattr(message_factory, "GetMessageClass", None)
                if get is not None:
                    cls = get(desc)
                else:  # protobuf before 4.22 (Debian 12's 4.21)
                    if self._factory is None:
                        self._factory = message_factory.MessageFactory(self._pool)
                    cls = self._factory.GetPrototype(desc)
                self._classes[full_name] = cls
            return cls

    def closure(self, path):
        """Returns the serialized file at path and every file it imports,
        directly or not, the file itself first."""
        out, seen, todo = [], set(), [path]
        while todo:
            p = todo.pop(0)
            if p in seen:
                continue
            seen.add(p)
            out.append(self.files[p])
            todo.extend(self.deps[p])
        return out


REGISTRY = Registry()
REGISTRY.add(_descriptors.FILES)


def _main_dir():
    """The directory of the program's main script, links followed (a
    plugin directory usually holds a link to it), or the working directory
    when there is no script (python3 -c, the interactive prompt)."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return os.path.dirname(os.path.realpath(main)) if main else os.getcwd()


def descriptor_set(source):
    """Returns the files of a FileDescriptorSet, serialized, each after its
    imports: what Catalog's files= and add_files take.

    source is the set's bytes or the path of a file holding it: the output
    of `buf build -o image.binpb` (a buf image is a FileDescriptorSet) or of
    `protoc --include_imports --descriptor_set_out=FILE`. A relative path is
    taken from the directory of the plugin's script (links followed), not
    from the working directory, which is the host's."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, where = bytes(source), "the descriptor set"
    else:
        path = os.fspath(source)
        if not os.path.isabs(path):
            path = os.path.join(_main_dir(), path)
        with open(path, "rb") as f:
            data = f.read()
        where = path
    try:
        fds = descriptor_pb2.FileDescriptorSet.FromString(data)
    except Exception as e:  # protobuf's DecodeError, whatever its module
        raise ValueError("%s is not a FileDescriptorSet (%s): make it with buf build -o FILE.binpb or protoc --include_imports --descriptor_set_out=FILE" % (where, e)) from None
    if not fds.file:
        raise ValueError("%s holds no files: build it from the kind's .proto files" % where)
    by_name = {}
    for fdp in fds.file:
        fdp.DiscardUnknownFields()  # such as buf's image extension
        by_name.setdefault(fdp.name, fdp)
    out, done, visiting = [], set(), set()

    def visit(name, importer):
        if name in done:
            return
        fdp = by_name.get(name)
        if fdp is None:
            if name in REGISTRY.files:
                return
            raise ValueError("%s: %s imports %s, which the set lacks: build it with its imports (buf build includes them unless --exclude-imports; protoc needs --include_imports)" % (where, importer, name))
        if name in visiting:
            raise ValueError("%s: %s imports itself through %s" % (where, name, importer))
        visiting.add(name)
        for dep in fdp.dependency:
            visit(dep, name)
        visiting.discard(name)
        done.add(name)
        out.append(fdp.SerializeToString())

    for fdp in fds.file:
        visit(fdp.name, fdp.name)
    return tuple(out)
