"""The memory budget of the requests in flight, as a Go plugin service's
(PLUGKIT_MAX_INFLIGHT_BYTES, plugin.ServiceLimits.MaxInflightBytes).

grpcio hands a request's bytes to its deserializer before any handler code
runs, so the budget is charged there: decoding a message takes room for
READ_COPIES times its size (the bytes grpcio copied, the parsed message, and
what parsing holds meanwhile); once decoded, the message counts its own size
until its handler returns (for a client stream, until it is decoded). A
message that does not fit is not decoded: its call ends with
RESOURCE_EXHAUSTED at once (grpcio's deserializer runs on its polling
thread, which must not wait).

A message's size is not known before gRPC reads it, so the read of a unary
or server-streaming call's request (from the worker thread's request for it
until it is decoded) reserves the most one may take, READ_COPIES times the
maximum message size, as a Go service does when it cannot see sizes: the
budget allows max(1, budget // that) such reads at once (one by default),
in turn; the others wait in their worker thread before gRPC reads anything
of their message (GatedExecutor). A client stream's messages do not wait (the
next may come much later, or never): each is charged while decoded. So the
requests of unary and server-streaming calls take at most the budget plus
those reads (448 MiB by default)."""

import threading
import weakref
from concurrent import futures

import grpc

ENV_MAX_INFLIGHT_BYTES = "PLUGKIT_MAX_INFLIGHT_BYTES"
DEFAULT_MAX_INFLIGHT_BYTES = 256 << 20
READ_COPIES = 3


class _Refused:
    """What the deserializer returns for a message that does not fit."""

    def __init__(self, size, budget):
        self.detail = (
            "plugin: a request message of %d bytes needs %d MiB of room to decode, and the requests in flight "
            "(%d MiB) leave less of the plugin's memory budget of %d MiB (%s): retry later with backoff, "
            "send smaller messages, or have the operator raise %s"
            % (size, (READ_COPIES * size) >> 20, budget.used >> 20, budget.limit >> 20, ENV_MAX_INFLIGHT_BYTES, ENV_MAX_INFLIGHT_BYTES)
        )


class _Charged:
    """A decoded request and the room it holds, given back once (release,
    or when the object is collected)."""

    def __init__(self, message, budget, n):
        self.message = message
        self.release = weakref.finalize(self, budget.give, n)


class Budget:
    """The bytes the requests in flight may take, over all calls."""

    def __init__(self, limit, max_message_size):
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()
        self._turns = threading.Semaphore(max(1, limit // (READ_COPIES * max_message_size)))

    def in_turn(self, read):
        """Returns read, made to wait for its turn."""

        def gated():
            with self._turns:
                return read()

        return gated

    def take(self, n):
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def give(self, n):
        with self._lock:
            self.used -= n

    def _deserializer(self, parse, keep):
        def deserialize(data):
            n = len(data)
            if not self.take(READ_COPIES * n):
                return _Refused(n, self)
            try:
                message = parse(data)
            except BaseException:
                self.give(READ_COPIES * n)
                raise
            if not keep:
                self.give(READ_COPIES * n)
                return _Charged(message, self, 0)
            self.give((READ_COPIES - 1) * n)
            return _Charged(message, self, n)

        return deserialize

    def wrap(self, handler):
        """Returns grpcio's method handler with its requests charged."""
        if handler is None or handler.request_deserializer is None:
            return handler
        parse = handler.request_deserializer
        if handler.request_streaming:
            deserialize = self._deserializer(parse, keep=False)
            behaviour = handler.stream_stream or handler.stream_unary

            def streamed(requests, context):
                return behaviour(_unwrap_all(requests, context), context)

            field = "stream_stream" if handler.stream_stream else "stream_unary"
            return handler._replace(request_deserializer=deserialize, **{field: streamed})

        deserialize = self._deserializer(parse, keep=True)
        if handler.unary_stream:
            behaviour = handler.unary_stream

            def streaming(request, context):
                msg = _unwrap(request, context)
                try:
                    yield from behaviour(msg, context)
                finally:
                    request.release()

            return handler._replace(request_deserializer=deserialize, unary_stream=streaming)

        behaviour = handler.unary_unary

        def unary(request, context):
            msg = _unwrap(request, context)
            try:
                return behaviour(msg, context)
            finally:
                request.release()

        return handler._replace(request_deserializer=deserialize, unary_unary=unary)


def _unwrap(request, context):
    if isinstance(request, _Refused):
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, request.detail)
    return request.message


def _unwrap_all(requests, context):
    for r in requests:
        yield _unwrap(r, context)


class BudgetHandler(grpc.GenericRpcHandler):
    """A generic handler whose requests are charged to budget."""

    def __init__(self, inner, budget):
        self.inner = inner
        self.budget = budget

    def service(self, handler_call_details):
        return self.budget.wrap(self.inner.service(handler_call_details))


# grpcio's functions that a worker runs for a call: (rpc_event, state,
# behaviour, argument_thunk, ...); the thunk reads the request.
_IN_POOL = ("_unary_response_in_pool", "_stream_response_in_pool")


class GatedExecutor(futures.ThreadPoolExecutor):
    """grpcio's worker threads, whose reads of a request wait for their turn
    in budget."""

    def __init__(self, budget, **kwargs):
        super().__init__(**kwargs)
        self.budget = budget

    def submit(self, fn, *args, **kwargs):
        if getattr(fn, "__name__", "") in _IN_POOL and len(args) >= 4 and callable(args[3]):
            args = args[:3] + (self.budget.in_turn(args[3]),) + args[4:]
        return super().submit(fn, *args, **kwargs)
