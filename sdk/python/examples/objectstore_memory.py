"""An in-memory object store served as objectstore v1 and v2 (with the
"presign" capability of 2.1): the Python counterpart of the Go example's
memory backend, for the example plugins next to this file."""

import hashlib
import threading

import grpc

import plugkit
import objectstore_descriptors

plugkit.add_files(objectstore_descriptors.FILES)

KIND = "objectstore"
COOKIE = ("PLUGKIT_EXAMPLE_PLUGIN", "objectstore")
CAP_PRESIGN = "presign"
CHUNK_SIZE = 256 << 10  # Get's chunks, as the Go backend sends them


class Memory:
    """Objects in a dict, guarded by a lock (calls come on many threads)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.objects = {}

    def get(self, key, context, op):
        with self.lock:
            data = self.objects.get(key)
        if data is None:
            context.abort(grpc.StatusCode.NOT_FOUND, '%s: no object "%s"' % (op, key))
        return data


class StoreV1:
    """objectstore.v1.ObjectStore over a Memory."""

    package = "objectstore.v1"

    def __init__(self, memory=None):
        self.mem = memory or Memory()

    def _msg(self, name, **fields):
        return plugkit.message("%s.%s" % (self.package, name))(**fields)

    def Init(self, request, context):
        # What a plugin prints reaches the host over go-plugin's stdio stream.
        print("objectstore: Init with %d settings" % len(request.config))
        return self._msg("InitResponse")

    def Put(self, request_iterator, context):
        key, chunks = None, []
        for i, req in enumerate(request_iterator):
            part = req.WhichOneof("part")
            if i == 0:
                if part != "key" or not req.key:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "put: the first message must carry a non-empty key")
                key = req.key
            elif part == "key":
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "put: only the first message may carry a key")
            else:
                chunks.append(req.chunk)
        if key is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "put: reading the key: EOF")
        data = b"".join(chunks)
        with self.mem.lock:
            self.mem.objects[key] = data
        return self._msg("PutResponse", key=key, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    def Get(self, request, context):
        data = self.mem.get(request.key, context, "get")
        for i in range(0, len(data), CHUNK_SIZE):
            yield self._msg("GetResponse", chunk=data[i : i + CHUNK_SIZE])

    def List(self, request, context):
        with self.mem.lock:
            keys = sorted(k for k in self.mem.objects if k.startswith(request.prefix))
        return self._msg("ListResponse", keys=keys)

    def Delete(self, request, context):
        with self.mem.lock:
            found = self.mem.objects.pop(request.key, None) is not None
        if not found:
            context.abort(grpc.StatusCode.NOT_FOUND, 'delete: no object "%s"' % request.key)
        return self._msg("DeleteResponse")

    def Exists(self, request, context):
        with self.mem.lock:
            found = request.key in self.mem.objects
        return self._msg("ExistsResponse", exists=found)


class StoreV2(StoreV1):
    """objectstore.v2.ObjectStore over a Memory: v1's calls, Stat, Copy and
    Presign (minor 1, capability "presign")."""

    package = "objectstore.v2"

    def Stat(self, request, context):
        data = self.mem.get(request.key, context, "stat")
        return self._msg("StatResponse", key=request.key, size=len(data), sha256=hashlib.sha256(data).hexdigest())

    def Copy(self, request, context):
        data = self.mem.get(request.source, context, "copy")
        with self.mem.lock:
            self.mem.objects[request.destination] = data
        return self._msg("CopyResponse", size=len(data))

    def Presign(self, request, context):
        self.mem.get(request.key, context, "presign")
        ttl = request.ttl_seconds or 900
        return self._msg("PresignResponse", url="pymemory://%s?ttl=%ds" % (request.key, ttl))
