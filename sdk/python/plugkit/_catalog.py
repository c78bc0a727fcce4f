"""The catalog: implementations per (kind, major, name), Describe, and the
routing of each call to the implementation its metadata names, as the Go
package catalog does."""


import grpc

from ._proto import REGISTRY

# PROTOCOL_VERSION is the app protocol version of a plugin that serves a
# catalog, whatever its kinds' majors (Go: wire.CatalogProtocolVersion).
PROTOCOL_VERSION = 1
# SDK_VERSION is the plugkit version the plugin reports in Describe.
SDK_VERSION = "0.1.0"
# NAME_KEY is the gRPC metadata key naming the implementation a call is for.
NAME_KEY = "plugkit-name"
CATALOG_SERVICE = "plugkit.catalog.v1.Catalog"


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def _q(s):
    """Quotes a string as Go's %q does: control and other unprintable
    characters escaped, and the bytes of a value that is not UTF-8 (an
    environment variable's, which Python holds as surrogates) as \\xNN."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        elif ch.isprintable():
            out.append(ch)
        elif o < 0x80:
            out.append("\\x%02x" % o)
        elif o <= 0xFFFF:
            out.append("\\u%04x" % o)
        else:
            out.append("\\U%08x" % o)
    out.append('"')
    return "".join(out)


class Implementation:
    """One (kind, major, name) a plugin serves.

    service is the full name of the major's gRPC service
    ("objectstore.v2.ObjectStore"); server has one method per RPC of it,
    named as the RPC, taking (request, context) or (request_iterator,
    context) as grpcio's generated servicers do. capabilities are the
    minor's optional features this implementation offers ("presign")."""

    def __init__(self, kind, major, minor, name, service, server, capabilities=()):
        self.kind = kind
        self.major = major
        self.minor = minor
        self.name = name
        self.service = service
        self.server = server
        self.capabilities = list(capabilities)


class _Group:
    def __init__(self, im):
        self.kind = im.kind
        self.major = im.major
        self.minor = im.minor
        self.service = im.service
        self.caps = list(im.capabilities)
        self.impls = {}

    def names(self):
        return ", ".join(sorted(self.impls))

    def pick(self, context):
        name = ""
        for key, value in context.invocation_metadata() or ():
            if key == NAME_KEY:
                name = value
                break
        if not name:
            if len(self.impls) == 1:
                return next(iter(self.impls.values()))
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "%s: this plugin serves several implementations (%s); name one in the %s metadata"
                % (self.service, self.names(), _q(NAME_KEY)),
            )
        impl = self.impls.get(name)
        if impl is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                "%s: no implementation named %s here; this plugin serves %s" % (self.service, _q(name), self.names()),
            )
        return impl


class Catalog:
    """The implementations a plugin serves. files are the serialized
    FileDescriptorProtos of the kinds' .proto files (each after its
    imports), from a module made by go run ./sdk/cmd/descriptors or from
    protoc --descriptor_set_out. Mistakes raise ValueError saying what to
    fix, as Go's catalog.New does."""

    def __init__(self, plugin_version, implementations, files=()):
        REGISTRY.add(files)
        if not implementations:
            raise ValueError("catalog: no implementations: declare at least one Implementation")
        self.version = plugin_version
        by_key = {}
        groups = []
        for im in implementations:
            where = "catalog: %s v%d %s" % (im.kind, im.major, _q(im.name))
            if not im.kind or " " in im.kind or "/" in im.kind:
                raise ValueError(where + ": kind must be a non-empty word")
            if not im.name:
                raise ValueError(where + ": name is empty; use a qualified name such as example.com/fs")
            if im.major < 0 or im.minor < 0:
                raise ValueError(where + ": versions must not be negative")
            if not im.service or im.server is None:
                raise ValueError(where + ": service and server are required")
            methods = REGISTRY.services.get(im.service)
            if methods is None:
                raise ValueError(
                    "%s: service %s is not in the descriptors given: pass the kind's files to Catalog(files=...)"
                    % (where, im.service)
                )
            missing = [m.name for m in methods if not callable(getattr(im.server, m.name, None))]
            if missing:
                raise ValueError(
                    "%s: %s does not implement %s: it lacks %s"
                    % (where, type(im.server).__name__, im.service, ", ".join(missing))
                )
            key = (im.kind, im.major)
            g = by_key.get(key)
            if g is None:
                g = by_key[key] = _Group(im)
                groups.append(g)
            if g.service != im.service:
                raise ValueError(
                    "%s: service %s, but another implementation of the same major uses %s"
                    % (where, im.service, g.service)
                )
            if im.name in g.impls:
                raise ValueError(where + ": declared twice")
            g.impls[im.name] = im.server
            # A major's minor and capabilities are what every
            # implementation of it offers (_Group starts from the first).
            g.minor = min(g.minor, im.minor)
            g.caps = [c for c in g.caps if c in im.capabilities]
        for g in groups:
            g.caps = sorted(set(g.caps))
        groups.sort(key=lambda g: (g.kind, -g.major))
        self.groups = groups

    def describe(self):
        """Returns what Catalog/Describe answers."""
        resp = REGISTRY.message("plugkit.catalog.v1.DescribeResponse")(
            plugin_version=self.version, sdk_version=SDK_VERSION
        )
        kind = None
        for g in self.groups:
            if kind is None or kind.name != g.kind:
                kind = resp.kinds.add(name=g.kind)
            kind.majors.add(
                major=g.major,
                minor=g.minor,
                service=g.service,
                capabilities=g.caps,
                names=sorted(g.impls),
            )
        return resp

    def handlers(self):
        """Returns the gRPC handlers: the catalog service and one router
        per (kind, major)."""
        out = [service_handler(CATALOG_SERVICE, _Describer(self))]
        for g in self.groups:
            out.append(_router(g))
        return out


class _Describer:
    def __init__(self, catalog):
        self.catalog = catalog

    def Describe(self, request, context):
        return self.catalog.describe()


def _router(group):
    handlers = {}
    for m in REGISTRY.services[group.service]:

        def call(request, context, _name=m.name):
            impl = group.pick(context)
            return getattr(impl, _name)(request, context)

        handlers[m.name] = method_handler(m, call)
    return grpc.method_handlers_generic_handler(group.service, handlers)


def method_handler(method, behaviour):
    """Returns grpcio's handler for one RPC, with the (de)serializers of its
    messages."""
    req = REGISTRY.message(method.input_type).FromString
    resp = REGISTRY.message(method.output_type).SerializeToString
    if method.client_streaming and method.server_streaming:
        make = grpc.stream_stream_rpc_method_handler
    elif method.client_streaming:
        make = grpc.stream_unary_rpc_method_handler
    elif method.server_streaming:
        make = grpc.unary_stream_rpc_method_handler
    else:
        make = grpc.unary_unary_rpc_method_handler
    return make(behaviour, request_deserializer=req, response_serializer=resp)


def service_handler(service, impl):
    """Returns a generic handler serving the RPCs of service that impl has
    a method for; the others answer UNIMPLEMENTED."""
    handlers = {}
    for m in REGISTRY.services[service]:
        fn = getattr(impl, m.name, None)
        if callable(fn):
            handlers[m.name] = method_handler(m, fn)
    return grpc.method_handlers_generic_handler(service, handlers)
