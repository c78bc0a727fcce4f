#!/usr/bin/python3
"""An objectstore v1 plugin in Python: example.com/pymemory, in memory.

Put it (or a link to it) in a plugin directory; plugkit finds the SDK next to
this file when it is not installed."""

import os
import sys

sys.path[:0] = [os.path.dirname(os.path.realpath(__file__)), os.path.join(os.path.dirname(os.path.realpath(__file__)), "..")]

import plugkit  # noqa: E402
from objectstore_memory import COOKIE, KIND, StoreV1  # noqa: E402

VERSION = "1.0.0"


def catalog():
    return plugkit.Catalog(
        VERSION,
        [plugkit.Implementation(KIND, 1, 0, "example.com/pymemory", "objectstore.v1.ObjectStore", StoreV1())],
    )


if __name__ == "__main__":
    plugkit.serve(catalog(), cookie=COOKIE)
