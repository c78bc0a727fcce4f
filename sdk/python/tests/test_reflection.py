"""Server reflection over the SDK's pool."""

import os
import sys
import unittest

from google.protobuf import descriptor_pb2

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import plugkit  # noqa: E402
import objectstore_descriptors  # noqa: E402
from plugkit._services import Reflection  # noqa: E402

plugkit.add_files(objectstore_descriptors.FILES)


class ReflectionTest(unittest.TestCase):
    def setUp(self):
        self.r = Reflection("grpc.reflection.v1", ["objectstore.v2.ObjectStore", "grpc.health.v1.Health"])
        self.req = plugkit.message("grpc.reflection.v1.ServerReflectionRequest")

    def names(self, resp):
        return [descriptor_pb2.FileDescriptorProto.FromString(b).name for b in resp.file_descriptor_response.file_descriptor_proto]

    def test_list_services(self):
        resp = self.r._answer(self.req(host="h", list_services=""))
        self.assertEqual([s.name for s in resp.list_services_response.service], ["grpc.health.v1.Health", "objectstore.v2.ObjectStore"])
        self.assertEqual(resp.valid_host, "h")
        self.assertEqual(resp.original_request.WhichOneof("message_request"), "list_services")

    def test_symbols(self):
        for sym in ["objectstore.v2.ObjectStore", "objectstore.v2.ObjectStore.Presign", "objectstore.v2.PutRequest"]:
            self.assertEqual(self.names(self.r._answer(self.req(file_containing_symbol=sym))), ["objectstore/v2/objectstore.proto"], sym)
        self.assertEqual(
            self.names(self.r._answer(self.req(file_containing_symbol="plugin.GRPCStdio"))),
            ["plugkit/goplugin/stdio.proto", "google/protobuf/empty.proto"],  # with its import
        )
        self.assertEqual(self.names(self.r._answer(self.req(file_by_filename="grpc/health/v1/health.proto"))), ["grpc/health/v1/health.proto"])

    def test_unknown_is_not_found(self):
        resp = self.r._answer(self.req(file_containing_symbol="no.Such"))
        self.assertEqual(resp.error_response.error_code, 5)
        self.assertIn("no.Such", resp.error_response.error_message)


if __name__ == "__main__":
    unittest.main()
