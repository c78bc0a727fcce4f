"""The cookie notice, the version negotiation and the handshake line, with
the texts Go's handshake package gives."""

import base64
import json
import os
import unittest

from plugkit import _serve
from plugkit._log import Logger, timestamp


class RecordingLogger(Logger):
    def __init__(self):
        super().__init__(level="trace")
        self.records = []

    def log(self, level, message, **fields):
        self.records.append((level, message, fields))


class VersionsTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(_serve.parse_versions(" 6, 5,,5 "), [5, 6])
        with self.assertRaises(_serve.PluginError) as cm:
            _serve.parse_versions("1,x")
        self.assertEqual(
            str(cm.exception),
            'PLUGIN_PROTOCOL_VERSIONS: protocol version "x" in "1,x" is not a non-negative integer; write versions as a comma list such as 5,6',
        )
        with self.assertRaises(_serve.PluginError):
            _serve.parse_versions("-1")

    def test_highest_common(self):
        log = RecordingLogger()
        self.assertEqual(_serve.choose_version([1, 2, 3], [2, 3, 4], log), 3)
        self.assertEqual(_serve.choose_version([1, 2], [], log), 2)
        self.assertEqual(log.records, [])

    def test_no_common_version_logs_go_text_and_answers_lowest(self):
        log = RecordingLogger()
        self.assertEqual(_serve.choose_version([2, 1], [5, 7], log), 1)
        self.assertEqual(
            log.records,
            [
                (
                    "error",
                    "no app protocol version in common with the host",
                    {
                        "plugin_versions": [1, 2],
                        "host_versions": [5, 7],
                        "error": "incompatible app protocol version: plugin supports [1 2], host supports [5 7]; "
                        "upgrade whichever side is older (or pick a plugin release that speaks one of [5 7])",
                    },
                )
            ],
        )


class LineTest(unittest.TestCase):
    def test_unpadded_base64_certificate(self):
        der = b"\x30\x82\x01"  # 3 bytes: no padding; 4 would need "=="
        self.assertEqual(_serve.handshake_line(1, "unix", "/s", der), "1|1|unix|/s|grpc|MIIB\n")
        line = _serve.handshake_line(1, "unix", "/s", der + b"\x00")
        cert = line.rstrip("\n").split("|")[5]
        self.assertNotIn("=", cert)
        self.assertEqual(base64.b64decode(cert + "=="), der + b"\x00")
        self.assertEqual(_serve.handshake_line(1, "tcp", "127.0.0.1:5", None), "1|1|tcp|127.0.0.1:5|grpc|\n")


class CookieTest(unittest.TestCase):
    def test_notice(self):
        self.assertEqual(
            _serve.cookie_notice("K"),
            "this binary is a plugin: it is not meant to be run by hand. Its host program starts it when it needs "
            "it (the host sets K). To look inside it, run: plugkit inspect PATH --cookie K=VALUE",
        )

    def test_wrong_cookie_exits_1_with_the_notice(self):
        r, w = os.pipe()
        saved = os.dup(2)
        os.dup2(w, 2)
        try:
            code = _serve.Plugin(None, ("K", "v"), environ={"K": "wrong"}).run()
        finally:
            os.dup2(saved, 2)
            os.close(w)
        out = os.read(r, 4096).decode()
        os.close(r)
        self.assertEqual(code, 1)
        self.assertEqual(out, _serve.cookie_notice("K") + "\n")


class LogTest(unittest.TestCase):
    def test_hclog_json_line(self):
        r, w = os.pipe()
        Logger(level="debug", fd=w).warn("disk full", path="/x", n=3)
        Logger(level="info", fd=w).debug("dropped")
        os.close(w)
        lines = os.read(r, 4096).decode().splitlines()
        os.close(r)
        self.assertEqual(len(lines), 1)
        rec = json.loads(lines[0])
        self.assertEqual(list(rec)[:3], ["@timestamp", "@level", "@message"])
        self.assertEqual((rec["@level"], rec["@message"], rec["path"], rec["n"]), ("warn", "disk full", "/x", 3))

    def test_timestamp_is_gos_format(self):
        import datetime
        import re

        utc = datetime.datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=datetime.timezone.utc)
        self.assertEqual(timestamp(utc), "2026-01-02T03:04:05.000060Z")
        cet = utc.astimezone(datetime.timezone(datetime.timedelta(hours=1)))
        self.assertEqual(timestamp(cet), "2026-01-02T04:04:05.000060+01:00")
        self.assertRegex(timestamp(), re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$"))


if __name__ == "__main__":
    unittest.main()
