"""plugkit's SDK for plugins written in Python.

A plugin declares its implementations per (kind, major, name) in a Catalog
and serves it:

    import plugkit
    import objectstore_descriptors  # the kind's .proto files, serialized

    catalog = plugkit.Catalog("1.0.0", [
        plugkit.Implementation("objectstore", 1, 0, "example.com/pymemory",
                               "objectstore.v1.ObjectStore", MemoryStore()),
    ], files=objectstore_descriptors.FILES)
    plugkit.serve(catalog, cookie=("PLUGKIT_EXAMPLE_PLUGIN", "objectstore"))

serve does everything docs/other-languages.md requires of a plugin (the
cookie check, the version negotiation, a private unix socket, AutoMTLS, the
flushed handshake line, Catalog/Describe and the routing by name) and what it
recommends (go-plugin's controller, stdio and broker, health, reflection,
hclog JSON logs on standard error, exiting when the host dies).

A kind of one's own gives its buf image (buf build -o image.binpb) or
protoc descriptor set as it is: files=plugkit.descriptor_set(
"descriptors/kind.binpb"), a relative path being read from the directory of
the plugin's script.

Messages are classes of the SDK's descriptor pool: plugkit.message(
"objectstore.v1.PutResponse"). The SDK needs grpcio and protobuf only
(Debian: python3-grpcio, python3-protobuf; pip: grpcio).
"""

from ._catalog import NAME_KEY, PROTOCOL_VERSION, SDK_VERSION, Catalog, Implementation
from ._log import Logger
from ._proto import REGISTRY, descriptor_set
from ._serve import Plugin, PluginError, cookie_notice, serve

__all__ = [
    "Catalog",
    "Implementation",
    "Logger",
    "NAME_KEY",
    "PROTOCOL_VERSION",
    "Plugin",
    "PluginError",
    "SDK_VERSION",
    "add_files",
    "cookie_notice",
    "descriptor_set",
    "message",
    "serve",
]


def message(full_name):
    """Returns the class of a message type of the files added so far
    (the SDK's own and those given to Catalog or add_files)."""
    return REGISTRY.message(full_name)


def add_files(serialized_files):
    """Adds serialized FileDescriptorProtos (each after its imports) to the
    SDK's pool, for message() before a Catalog exists."""
    REGISTRY.add(serialized_files)
