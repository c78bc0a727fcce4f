"""The AutoMTLS certificate: well-formed DER, the fields the Go host checks,
a signature that verifies, and a key that matches it."""

import base64
import datetime
import hashlib
import unittest

from plugkit import _automtls


def parse(der):
    """Reads one DER TLV: (tag, body, rest)."""
    tag, n = der[0], der[1]
    i = 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(der[2 : 2 + k], "big")
        i = 2 + k
    return tag, der[i : i + n], der[i + n :]


def children(body):
    out = []
    while body:
        tag, inner, body = parse(body)
        out.append((tag, inner))
    return out


def verify(der_public_point, message, r, s):
    """Checks an ECDSA-SHA256 signature with the module's own P-256
    arithmetic: the test's check that the certificate is self-signed."""
    n, p, add, mul = _automtls._N, _automtls._P, _automtls._add, _automtls._mul
    x = int.from_bytes(der_public_point[1:33], "big")
    y = int.from_bytes(der_public_point[33:65], "big")
    if not (0 < r < n and 0 < s < n):
        return False
    z = int.from_bytes(hashlib.sha256(message).digest(), "big")
    w = pow(s, -1, n)
    p1 = mul(z * w % n, _automtls._G)
    p2 = mul(r * w % n, (x, y))
    total = add((p1[0], p1[1], 1), (p2[0], p2[1], 1))
    if total is None:
        return False
    tx, _, tz = total
    return tx * pow(tz * tz, -1, p) % p % n == r


class CertificateTest(unittest.TestCase):
    def setUp(self):
        self.now = datetime.datetime(2030, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)
        self.id = _automtls.new_identity(now=self.now)

    def test_pem_holds_the_der(self):
        body = b"".join(l for l in self.id.cert_pem.splitlines() if not l.startswith(b"-----"))
        self.assertEqual(base64.b64decode(body), self.id.der)
        self.assertTrue(self.id.key_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----\n"))

    def test_fields_and_signature(self):
        tag, cert, rest = parse(self.id.der)
        self.assertEqual((tag, rest), (0x30, b""))
        (t1, tbs_body), (t2, alg), (t3, sig) = children(cert)
        self.assertEqual((t1, t2, t3), (0x30, 0x30, 0x03))
        fields = children(tbs_body)
        version, serial, sig_alg, issuer, validity, subject, spki, exts = fields
        self.assertEqual(version, (0xA0, b"\x02\x01\x02"))  # v3
        self.assertGreater(int.from_bytes(serial[1], "big"), 0)
        self.assertEqual(issuer, subject)  # self-signed
        self.assertIn(b"localhost", subject[1])
        self.assertIn(b"plugkit", subject[1])
        (nb_tag, nb), (na_tag, na) = children(validity[1])
        self.assertEqual(nb, b"300506070739Z")  # 30 s before now
        self.assertEqual(na[:6], b"400503")  # ten years of 365 days on
        ext_der = children(exts[1])[0][1]
        ext = {children(e)[0][1]: children(e)[1:] for _, e in children(ext_der)}
        oid = lambda s: _automtls._oid(s)[2:]
        key_usage = ext[oid("2.5.29.15")]
        self.assertEqual(key_usage[0], (0x01, b"\xff"))  # critical
        self.assertEqual(key_usage[1][1], b"\x03\x02\x02\xac")
        self.assertIn(b"\x82\x09localhost", ext[oid("2.5.29.17")][0][1])
        self.assertEqual(ext[oid("2.5.29.19")][1][1], b"\x30\x03\x01\x01\xff")  # CA
        eku = ext[oid("2.5.29.37")][0][1]
        self.assertIn(oid("1.3.6.1.5.5.7.3.1"), eku)  # server auth
        self.assertIn(oid("1.3.6.1.5.5.7.3.2"), eku)  # client auth

        # The signature over the TBS verifies with the certificate's key.
        _, whole, _ = parse(self.id.der)
        tbs = whole[: len(whole) - len(parse(whole)[2])]  # the TBS's own bytes
        point = children(spki[1])[1][1][1:]  # the BIT STRING, past its unused-bits byte
        (rt, r), (st, s) = children(parse(sig[1:])[1])
        r, s = int.from_bytes(r, "big"), int.from_bytes(s, "big")
        self.assertTrue(verify(point, tbs, r, s))
        self.assertFalse(verify(point, tbs + b"x", r, s))

    def test_each_identity_is_new(self):
        self.assertNotEqual(_automtls.new_identity().der, self.id.der)


if __name__ == "__main__":
    unittest.main()
