"""The catalog: Describe as Go's catalog answers it, routing by the
plugkit-name metadata, and the mistakes it refuses."""

import os
import sys
import unittest

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import plugkit  # noqa: E402
import objectstore_descriptors  # noqa: E402
from objectstore_memory import StoreV1, StoreV2  # noqa: E402

V1, V2 = "objectstore.v1.ObjectStore", "objectstore.v2.ObjectStore"


class Aborted(Exception):
    pass


class FakeContext:
    def __init__(self, metadata=()):
        self.metadata = list(metadata)
        self.code = None

    def invocation_metadata(self):
        return self.metadata

    def abort(self, code, details):
        self.code, self.details = code, details
        raise Aborted(details)


def catalog(*impls):
    return plugkit.Catalog("9.9.9", list(impls), files=objectstore_descriptors.FILES)


class DescribeTest(unittest.TestCase):
    def test_lowest_minor_common_capabilities_sorted(self):
        c = catalog(
            plugkit.Implementation("objectstore", 1, 0, "b/v1", V1, StoreV1()),
            plugkit.Implementation("objectstore", 2, 1, "z/two", V2, StoreV2(), capabilities=["presign", "zeta", "zeta"]),
            plugkit.Implementation("objectstore", 2, 3, "a/two", V2, StoreV2(), capabilities=["zeta", "presign", "x"]),
        )
        d = c.describe()
        self.assertEqual((d.plugin_version, d.sdk_version), ("9.9.9", plugkit.SDK_VERSION))
        self.assertEqual([k.name for k in d.kinds], ["objectstore"])
        majors = d.kinds[0].majors
        self.assertEqual([m.major for m in majors], [2, 1])  # highest first
        two = majors[0]
        self.assertEqual((two.minor, two.service, list(two.capabilities), list(two.names)), (1, V2, ["presign", "zeta"], ["a/two", "z/two"]))
        self.assertEqual((majors[1].minor, list(majors[1].names)), (0, ["b/v1"]))


class RoutingTest(unittest.TestCase):
    def setUp(self):
        self.a, self.b = StoreV1(), StoreV1()
        self.cat = catalog(
            plugkit.Implementation("objectstore", 1, 0, "ex/a", V1, self.a),
            plugkit.Implementation("objectstore", 1, 0, "ex/b", V1, self.b),
        )
        self.group = self.cat.groups[0]

    def test_by_name(self):
        self.assertIs(self.group.pick(FakeContext([(plugkit.NAME_KEY, "ex/b")])), self.b)

    def test_unknown_name_is_not_found(self):
        ctx = FakeContext([(plugkit.NAME_KEY, "ex/c")])
        with self.assertRaises(Aborted):
            self.group.pick(ctx)
        self.assertEqual(ctx.code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(ctx.details, V1 + ': no implementation named "ex/c" here; this plugin serves ex/a, ex/b')

    def test_no_name_with_several_is_invalid_argument(self):
        ctx = FakeContext()
        with self.assertRaises(Aborted):
            self.group.pick(ctx)
        self.assertEqual(ctx.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(
            ctx.details,
            V1 + ': this plugin serves several implementations (ex/a, ex/b); name one in the "plugkit-name" metadata',
        )

    def test_no_name_with_one_picks_it(self):
        only = StoreV1()
        cat = catalog(plugkit.Implementation("objectstore", 1, 0, "ex/only", V1, only))
        self.assertIs(cat.groups[0].pick(FakeContext()), only)


class MistakesTest(unittest.TestCase):
    def check(self, want, *impls):
        with self.assertRaises(ValueError) as cm:
            catalog(*impls)
        self.assertIn(want, str(cm.exception))

    def test_mistakes(self):
        I = plugkit.Implementation
        self.check("no implementations")
        self.check("kind must be a non-empty word", I("object store", 1, 0, "n", V1, StoreV1()))
        self.check("name is empty", I("objectstore", 1, 0, "", V1, StoreV1()))
        self.check("versions must not be negative", I("objectstore", 1, -1, "n", V1, StoreV1()))
        self.check("is not in the descriptors given", I("objectstore", 1, 0, "n", "nope.v1.Nope", StoreV1()))
        self.check("StoreV1 does not implement objectstore.v2.ObjectStore: it lacks Stat, Copy, Presign", I("objectstore", 2, 0, "n", V2, StoreV1()))
        self.check("another implementation of the same major uses", I("objectstore", 1, 0, "a", V1, StoreV1()), I("objectstore", 1, 0, "b", V2, StoreV2()))
        self.check("declared twice", I("objectstore", 1, 0, "a", V1, StoreV1()), I("objectstore", 1, 0, "a", V1, StoreV1()))


if __name__ == "__main__":
    unittest.main()
