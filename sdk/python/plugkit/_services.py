"""The services every plugin serves beside its kinds: gRPC health (for the
service "plugin"), go-plugin's GRPCController, GRPCStdio and GRPCBroker, and
gRPC server reflection (v1 and v1alpha). Written from the services' public
definitions; their messages come from the descriptors in _descriptors."""

import contextlib
import io
import queue
import threading

import grpc

from ._proto import REGISTRY

HEALTH_SERVICE = "grpc.health.v1.Health"
# PLUGIN_HEALTH is the service name whose health go-plugin hosts check.
PLUGIN_HEALTH = "plugin"

# STDIO_CHUNK is the most output one GRPCStdio message carries (the Go
# plugin's size; the host refuses messages over 64 KiB).
STDIO_CHUNK = 32 << 10
SERVING, NOT_SERVING = 1, 2


class Lifecycle:
    """What the services share: the stop request and the long-lived
    streams to end when the plugin stops."""

    def __init__(self):
        self.stop = threading.Event()
        self.reason = None
        self.ended = False  # end_streams ran: the plugin stops
        self._lock = threading.Lock()
        self._streams = set()

    def request_stop(self, reason):
        with self._lock:
            if self.reason is None:
                self.reason = reason
        self.stop.set()

    @contextlib.contextmanager
    def stream(self, context):
        """Yields an event set when the call ends or the plugin stops: what
        a long-lived stream waits on, forgotten when the stream returns."""
        ev = threading.Event()
        context.add_callback(ev.set)
        with self._lock:
            self._streams.add(ev)
            if self.ended:
                ev.set()
        try:
            yield ev
        finally:
            with self._lock:
                self._streams.discard(ev)

    def end_streams(self):
        with self._lock:
            self.ended = True
            for ev in self._streams:
                ev.set()


class Health:
    """grpc.health.v1.Health: SERVING for "" and "plugin" until the plugin
    stops, NOT_FOUND for other services."""

    def __init__(self, life):
        self.life = life
        self.response = REGISTRY.message("grpc.health.v1.HealthCheckResponse")
        self.list_response = REGISTRY.message("grpc.health.v1.HealthListResponse")

    def _status(self):
        return NOT_SERVING if self.life.ended else SERVING

    def Check(self, request, context):
        if request.service not in ("", PLUGIN_HEALTH):
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return self.response(status=self._status())

    def List(self, request, context):
        out = self.list_response()
        for name in ("", PLUGIN_HEALTH):
            out.statuses[name].status = self._status()
        return out

    def Watch(self, request, context):
        known = request.service in ("", PLUGIN_HEALTH)
        yield self.response(status=self._status() if known else 3)  # SERVICE_UNKNOWN
        with self.life.stream(context) as ev:
            ev.wait()
            if known and context.is_active():
                yield self.response(status=NOT_SERVING)


class Controller:
    """go-plugin's plugin.GRPCController: Shutdown asks the plugin to stop;
    the answer goes out before the stop."""

    def __init__(self, life):
        self.life = life
        self.empty = REGISTRY.message("plugin.Empty")

    def Shutdown(self, request, context):
        self.life.request_stop("the host asked")
        return self.empty()


class Broker:
    """go-plugin's plugin.GRPCBroker: the SDK brokers no connections, so it
    holds the host's stream open, sends nothing, and ends it when the
    plugin stops."""

    def __init__(self, life):
        self.life = life

    def StartStream(self, request_iterator, context):
        with self.life.stream(context) as ev:
            ev.wait()
        return iter(())


class Stdio:
    """go-plugin's plugin.GRPCStdio: what the plugin writes to sys.stdout and
    sys.stderr after the handshake goes to the host over this stream."""

    STDOUT, STDERR = 1, 2

    def __init__(self, life):
        self.life = life
        self.data = REGISTRY.message("plugin.StdioData")
        self.queue = queue.Queue(maxsize=4096)

    def put(self, channel, data):
        # The host takes stdio messages of at most 64 KiB: send pieces of
        # STDIO_CHUNK bytes, as the Go plugin does.
        for i in range(0, len(data), STDIO_CHUNK):
            try:
                self.queue.put_nowait(self.data(channel=channel, data=data[i : i + STDIO_CHUNK]))
            except queue.Full:
                return  # nobody reads: drop rather than block the plugin

    def StreamStdio(self, request, context):
        with self.life.stream(context) as ev:
            while not ev.is_set():
                try:
                    yield self.queue.get(timeout=0.2)
                except queue.Empty:
                    continue


class StdioWriter(io.TextIOBase):
    """A text stream that sends what is written over GRPCStdio."""

    def __init__(self, stdio, channel):
        self.stdio = stdio
        self.channel = channel

    def writable(self):
        return True

    def write(self, s):
        if s:
            self.stdio.put(self.channel, s.encode("utf-8", "replace"))
        return len(s)


class Reflection:
    """gRPC server reflection over the descriptor pool, for one of its
    packages ("grpc.reflection.v1" or "grpc.reflection.v1alpha")."""

    def __init__(self, package, services):
        self.response = REGISTRY.message(package + ".ServerReflectionResponse")
        self.services = sorted(services)

    def ServerReflectionInfo(self, request_iterator, context):
        for req in request_iterator:
            yield self._answer(req)

    def _answer(self, req):
        resp = self.response(valid_host=req.host)
        resp.original_request.CopyFrom(req)
        kind = req.WhichOneof("message_request")
        if kind == "list_services":
            for name in self.services:
                resp.list_services_response.service.add(name=name)
        elif kind == "file_by_filename":
            if req.file_by_filename in REGISTRY.files:
                resp.file_descriptor_response.file_descriptor_proto.extend(REGISTRY.closure(req.file_by_filename))
            else:
                self._error(resp, "unknown file " + req.file_by_filename)
        elif kind == "file_containing_symbol":
            path = REGISTRY.symbols.get(req.file_containing_symbol)
            if path is not None:
                resp.file_descriptor_response.file_descriptor_proto.extend(REGISTRY.closure(path))
            else:
                self._error(resp, "unknown symbol " + req.file_containing_symbol)
        elif kind == "file_containing_extension":
            self._error(resp, "no extensions are served")
        elif kind == "all_extension_numbers_of_type":
            if req.all_extension_numbers_of_type in REGISTRY.symbols:
                resp.all_extension_numbers_response.base_type_name = req.all_extension_numbers_of_type
            else:
                self._error(resp, "unknown type " + req.all_extension_numbers_of_type)
        else:
            resp.error_response.error_code = grpc.StatusCode.INVALID_ARGUMENT.value[0]
            resp.error_response.error_message = "empty reflection request"
        return resp

    @staticmethod
    def _error(resp, message):
        resp.error_response.error_code = grpc.StatusCode.NOT_FOUND.value[0]
        resp.error_response.error_message = message
