"""descriptor_set: a kind's FileDescriptorSet (a buf image or protoc's
--descriptor_set_out) read as Catalog's files, each after its imports."""

import os
import shutil
import tempfile
import unittest

from google.protobuf import descriptor_pb2

import plugkit


def kind_files():
    """A two-file kind: meter/v1/meter.proto imports meter/v1/types.proto
    and google/protobuf/empty.proto (one of the SDK's own)."""
    types = descriptor_pb2.FileDescriptorProto(name="meter/v1/types.proto", package="meter.v1", syntax="proto3")
    types.message_type.add(name="Reading").field.add(name="watts", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL, json_name="watts")
    meter = descriptor_pb2.FileDescriptorProto(name="meter/v1/meter.proto", package="meter.v1", syntax="proto3",
                                               dependency=["meter/v1/types.proto", "google/protobuf/empty.proto"])
    svc = meter.service.add(name="Meter")
    svc.method.add(name="Read", input_type=".google.protobuf.Empty", output_type=".meter.v1.Reading")
    return types, meter


class Meter:
    def Read(self, request, context):
        return plugkit.message("meter.v1.Reading")(watts=7)


class DescriptorSetTest(unittest.TestCase):
    def test_files_come_after_their_imports_without_buf_extensions(self):
        types, meter = kind_files()
        # An image lists the importer first here, and meter.proto carries an
        # unknown field, as buf's ImageFile extension (8042) is to protobuf.
        raw_meter = meter.SerializeToString() + b"\xd0\xf6\x03\x01"  # field 8042, varint 1
        fds = descriptor_pb2.FileDescriptorSet()
        fds.file.add().MergeFromString(raw_meter)
        fds.file.add().CopyFrom(types)
        d = tempfile.mkdtemp(prefix="plugkit-test-")
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "image.binpb")
        with open(path, "wb") as f:
            f.write(fds.SerializeToString())

        files = plugkit.descriptor_set(path)
        names = [descriptor_pb2.FileDescriptorProto.FromString(f).name for f in files]
        self.assertEqual(names, ["meter/v1/types.proto", "meter/v1/meter.proto"])
        self.assertEqual(files[1], meter.SerializeToString())  # the extension is gone
        self.assertEqual(plugkit.descriptor_set(fds.SerializeToString()), files)

        c = plugkit.Catalog("1.0.0", [plugkit.Implementation("meter", 1, 0, "example.com/meter", "meter.v1.Meter", Meter())], files=files)
        self.assertEqual(c.describe().kinds[0].majors[0].service, "meter.v1.Meter")
        self.assertEqual(Meter().Read(None, None).watts, 7)

    def test_a_set_without_an_import_says_how_to_build_it(self):
        _, meter = kind_files()
        meter.dependency[0] = "meter/v1/absent.proto"  # in no set, nor the SDK's pool
        fds = descriptor_pb2.FileDescriptorSet(file=[meter])
        with self.assertRaisesRegex(ValueError, "meter/v1/meter.proto imports meter/v1/absent.proto, which the set lacks: build it with its imports"):
            plugkit.descriptor_set(fds.SerializeToString())

    def test_not_a_descriptor_set(self):
        with self.assertRaisesRegex(ValueError, "is not a FileDescriptorSet .*buf build -o"):
            plugkit.descriptor_set(b"\xff\xff\xff")
        with self.assertRaisesRegex(ValueError, "holds no files"):
            plugkit.descriptor_set(b"")


if __name__ == "__main__":
    unittest.main()
