"""A plugin run as a host runs it: the handshake line, AutoMTLS with a
client certificate required, health, Describe, a kind's call, and Shutdown,
after which the process exits 0 and its socket directory is gone."""

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import grpc

import plugkit
from plugkit import _automtls

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
sys.path.insert(0, EXAMPLES)
import objectstore_descriptors  # noqa: E402

plugkit.add_files(objectstore_descriptors.FILES)


def pem(der):
    b64 = base64.b64encode(der).decode()
    return ("-----BEGIN CERTIFICATE-----\n" + "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64)) + "\n-----END CERTIFICATE-----\n").encode()


class ServeTest(unittest.TestCase):
    def start(self, env):
        self.dir = tempfile.mkdtemp(prefix="sdk-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        full = dict(os.environ, PLUGKIT_EXAMPLE_PLUGIN="objectstore", PLUGIN_PROTOCOL_VERSIONS="1", PLUGIN_UNIX_SOCKET_DIR=self.dir)
        full.update(env)
        proc = subprocess.Popen([sys.executable, os.path.join(EXAMPLES, "objectstore_v1.py")], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(proc.kill)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.stderr.close)
        line = proc.stdout.readline().decode()
        return proc, line.rstrip("\n").split("|")

    def unary(self, channel, method, req_type, resp_type, **fields):
        call = channel.unary_unary(
            method,
            request_serializer=plugkit.message(req_type).SerializeToString,
            response_deserializer=plugkit.message(resp_type).FromString,
        )
        return call(plugkit.message(req_type)(**fields), timeout=10)

    def test_automtls_calls_and_shutdown(self):
        host = _automtls.new_identity()
        proc, f = self.start({"PLUGIN_CLIENT_CERT": host.cert_pem.decode()})
        self.assertEqual(f[:3] + [f[4]], ["1", "1", "unix", "grpc"], f)
        sock = f[3]
        self.assertEqual(os.path.dirname(os.path.dirname(sock)), self.dir)
        self.assertEqual(os.stat(sock).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.dirname(sock)).st_mode & 0o777, 0o700)
        plugin_cert = pem(base64.b64decode(f[5] + "=" * (-len(f[5]) % 4)))

        # Without a client certificate the TLS handshake fails.
        anon = grpc.secure_channel("unix:" + sock, grpc.ssl_channel_credentials(root_certificates=plugin_cert))
        with self.assertRaises(grpc.RpcError):
            self.unary(anon, "/grpc.health.v1.Health/Check", "grpc.health.v1.HealthCheckRequest", "grpc.health.v1.HealthCheckResponse", service="plugin")
        anon.close()

        creds = grpc.ssl_channel_credentials(root_certificates=plugin_cert, private_key=host.key_pem, certificate_chain=host.cert_pem)
        ch = grpc.secure_channel("unix:" + sock, creds)
        h = self.unary(ch, "/grpc.health.v1.Health/Check", "grpc.health.v1.HealthCheckRequest", "grpc.health.v1.HealthCheckResponse", service="plugin")
        self.assertEqual(h.status, 1)  # SERVING
        d = self.unary(ch, "/plugkit.catalog.v1.Catalog/Describe", "plugkit.catalog.v1.DescribeRequest", "plugkit.catalog.v1.DescribeResponse")
        self.assertEqual(list(d.kinds[0].majors[0].names), ["example.com/pymemory"])
        e = self.unary(ch, "/objectstore.v1.ObjectStore/Exists", "objectstore.v1.ExistsRequest", "objectstore.v1.ExistsResponse", key="k")
        self.assertFalse(e.exists)
        self.unary(ch, "/plugin.GRPCController/Shutdown", "plugin.Empty", "plugin.Empty")
        ch.close()
        self.assertEqual(proc.wait(timeout=10), 0)
        self.assertEqual(os.listdir(self.dir), [])  # the socket directory is gone

    def test_plain_text_and_sigterm(self):
        proc, f = self.start({})
        self.assertEqual(f[5], "")  # no certificate without PLUGIN_CLIENT_CERT
        ch = grpc.insecure_channel("unix:" + f[3])
        d = self.unary(ch, "/plugkit.catalog.v1.Catalog/Describe", "plugkit.catalog.v1.DescribeRequest", "plugkit.catalog.v1.DescribeResponse")
        self.assertEqual(d.plugin_version, "1.0.0")
        ch.close()
        proc.terminate()
        self.assertEqual(proc.wait(timeout=10), 0)
        self.assertEqual(os.listdir(self.dir), [])

    def test_inflight_budget(self):
        # A request whose decoding needs more than PLUGKIT_MAX_INFLIGHT_BYTES
        # is refused with RESOURCE_EXHAUSTED before it is parsed; a smaller
        # one is served.
        proc, f = self.start({"PLUGKIT_MAX_INFLIGHT_BYTES": str(3 << 20)})
        ch = grpc.insecure_channel("unix:" + f[3], options=[("grpc.max_send_message_length", 8 << 20)])
        describe = ch.unary_unary("/plugkit.catalog.v1.Catalog/Describe")

        def junk(n):  # DescribeRequest with an unknown field 15 of n bytes
            return b"\x7a" + _varint(n) + b"\0" * n

        describe(junk(512 << 10), timeout=30)
        with self.assertRaises(grpc.RpcError) as cm:
            describe(junk(2 << 20), timeout=30)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, cm.exception.details())
        self.assertIn("PLUGKIT_MAX_INFLIGHT_BYTES", cm.exception.details())
        describe(junk(512 << 10), timeout=30)  # the refused request's room is back
        ch.close()
        proc.terminate()
        self.assertEqual(proc.wait(timeout=10), 0)

    def test_reads_wait_in_grpcio_workers(self):
        # GatedExecutor recognizes grpcio's worker functions by name: a
        # grpcio that renames them would read every request at once.
        import grpc._server

        from plugkit import _budget

        for name in _budget._IN_POOL:
            self.assertTrue(callable(getattr(grpc._server, name, None)), name)


def _varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


class MalformedEnvTest(unittest.TestCase):
    """Each malformed variable stops the plugin with one line on standard
    error naming the variable and its value, escaped, and status 1."""

    CASES = [
        (b"PLUGIN_MIN_PORT", b"abc", b'PLUGIN_MIN_PORT="abc" is not a port number (0-65535)'),
        (b"PLUGIN_MAX_PORT", b"70000", b'PLUGIN_MAX_PORT="70000" is not a port number (0-65535)'),
        (b"PLUGIN_MIN_PORT", b"\xff\x1b[2J", b'PLUGIN_MIN_PORT="\\xff\\x1b[2J" is not a port number (0-65535)'),
        (b"PLUGIN_UNIX_SOCKET_GROUP", b"no-such-group-plugkit", b'socket group "no-such-group-plugkit" (PLUGIN_UNIX_SOCKET_GROUP): no such group'),
        (b"PLUGIN_UNIX_SOCKET_GROUP", b"bad\xfe", b'socket group "bad\\xfe" (PLUGIN_UNIX_SOCKET_GROUP): no such group'),
        (b"PLUGKIT_MAX_INFLIGHT_BYTES", b"lots", b'PLUGKIT_MAX_INFLIGHT_BYTES="lots": want a positive integer'),
        (b"PLUGIN_UNIX_SOCKET_DIR", b"/nonexistent\xff", b'"/nonexistent\\xff" (PLUGIN_UNIX_SOCKET_DIR)'),
        (b"PLUGIN_PROTOCOL_VERSIONS", b"1,\xff", b'PLUGIN_PROTOCOL_VERSIONS: protocol version "\\xff"'),
    ]

    def test_one_line_naming_the_variable(self):
        for key, value, want in self.CASES:
            with self.subTest(key=key, value=value):
                env = {k.encode(): v.encode() for k, v in os.environ.items()}
                env.update({b"PLUGKIT_EXAMPLE_PLUGIN": b"objectstore", b"PLUGIN_PROTOCOL_VERSIONS": b"1", key: value})
                p = subprocess.run(
                    [sys.executable, os.path.join(EXAMPLES, "objectstore_v1.py")],
                    env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                )
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, b"")
                lines = p.stderr.splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(want, lines[0])
                self.assertTrue(all(0x20 <= c < 0x7F for c in lines[0]), lines[0])


if __name__ == "__main__":
    unittest.main()


class StdioTest(unittest.TestCase):
    def test_large_writes_are_sent_in_pieces(self):
        """A write over the host's 64 KiB stdio message limit goes in
        pieces of at most 32 KiB, in order, nothing lost."""
        from plugkit import _services

        stdio = _services.Stdio(None)
        data = bytes(range(256)) * 400  # 100 KiB
        stdio.put(_services.Stdio.STDERR, data)
        pieces = []
        while not stdio.queue.empty():
            pieces.append(stdio.queue.get_nowait())
        self.assertEqual(len(pieces), 4)
        self.assertTrue(all(len(p.data) <= 32 << 10 and p.channel == _services.Stdio.STDERR for p in pieces))
        self.assertEqual(b"".join(p.data for p in pieces), data)
