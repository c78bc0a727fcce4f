#!/usr/bin/python3
"""An objectstore v2.1 plugin in Python, with the "presign" capability:
example.com/pymemory2, in memory.

Put it (or a link to it) in a plugin directory; plugkit finds the SDK next to
this file when it is not installed."""

import os
import sys

sys.path[:0] = [os.path.dirname(os.path.realpath(__file__)), os.path.join(os.path.dirname(os.path.realpath(__file__)), "..")]

import plugkit  # noqa: E402
from objectstore_memory import CAP_PRESIGN, COOKIE, KIND, StoreV2  # noqa: E402

VERSION = "2.1.0"


def catalog():
    return plugkit.Catalog(
        VERSION,
        [
            plugkit.Implementation(
                KIND, 2, 1, "example.com/pymemory2", "objectstore.v2.ObjectStore", StoreV2(), capabilities=[CAP_PRESIGN]
            )
        ],
    )


if __name__ == "__main__":
    plugkit.serve(catalog(), cookie=COOKIE)
