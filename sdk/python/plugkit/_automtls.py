"""AutoMTLS: a fresh self-signed ECDSA P-256 certificate, in pure Python.

Debian's python3-grpcio and python3-protobuf are all the SDK may assume, and
neither makes keys or certificates, so this module does the little X.509 it
needs by hand: a P-256 key pair, an ECDSA-SHA256 signature, and the DER of a
certificate shaped as plugkit's Go side (automtls.New) makes it: CN and DNS
name "localhost", organisation "plugkit", a CA, digital signature, key
encipherment, key agreement and certificate signing, client and server
authentication, valid from 30 s ago for ten years.
"""

import base64
import datetime
import hashlib
import secrets

# NIST P-256 (secp256r1), from FIPS 186-4 D.1.2.3.
_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_A = _P - 3
_B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)

SERVER_NAME = "localhost"
_LIFETIME = datetime.timedelta(days=10 * 365)


def _double(p):
    """Doubles a point in Jacobian coordinates (None is infinity)."""
    if p is None:
        return None
    x, y, z = p
    if y == 0:
        return None
    yy = y * y % _P
    s = 4 * x * yy % _P
    zz = z * z % _P
    m = 3 * (x - zz) * (x + zz) % _P  # a = -3
    x3 = (m * m - 2 * s) % _P
    y3 = (m * (s - x3) - 8 * yy * yy) % _P
    z3 = 2 * y * z % _P
    return (x3, y3, z3)


def _add(p, q):
    """Adds two points in Jacobian coordinates."""
    if p is None:
        return q
    if q is None:
        return p
    x1, y1, z1 = p
    x2, y2, z2 = q
    z1z1 = z1 * z1 % _P
    z2z2 = z2 * z2 % _P
    u1 = x1 * z2z2 % _P
    u2 = x2 * z1z1 % _P
    s1 = y1 * z2 * z2z2 % _P
    s2 = y2 * z1 * z1z1 % _P
    if u1 == u2:
        return _double(p) if s1 == s2 else None
    h = (u2 - u1) % _P
    r = (s2 - s1) % _P
    hh = h * h % _P
    hhh = h * hh % _P
    v = u1 * hh % _P
    x3 = (r * r - hhh - 2 * v) % _P
    y3 = (r * (v - x3) - s1 * hhh) % _P
    z3 = h * z1 * z2 % _P
    return (x3, y3, z3)


def _mul(k, point):
    """Returns k times an affine point, as an affine point."""
    result = None
    addend = (point[0], point[1], 1)
    while k:
        if k & 1:
            result = _add(result, addend)
        addend = _double(addend)
        k >>= 1
    if result is None:
        raise ValueError("point at infinity")
    x, y, z = result
    zinv = pow(z, -1, _P)
    zinv2 = zinv * zinv % _P
    return (x * zinv2 % _P, y * zinv2 * zinv % _P)


def _on_curve(point):
    x, y = point
    return (y * y - (x * x * x + _A * x + _B)) % _P == 0


def _sign(d, message):
    """Signs message with private key d: ECDSA with SHA-256, as (r, s)."""
    z = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = secrets.randbelow(_N - 1) + 1
        r = _mul(k, _G)[0] % _N
        if r == 0:
            continue
        s = pow(k, -1, _N) * (z + r * d) % _N
        if s != 0:
            return r, s


# DER, only the few types a certificate needs.


def _tlv(tag, body):
    n = len(body)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + body


def _seq(*items):
    return _tlv(0x30, b"".join(items))


def _int(v):
    return _tlv(0x02, v.to_bytes(v.bit_length() // 8 + 1, "big"))


def _oid(dotted):
    parts = [int(p) for p in dotted.split(".")]
    body = bytes([40 * parts[0] + parts[1]])
    for p in parts[2:]:
        enc = [p & 0x7F]
        p >>= 7
        while p:
            enc.append(0x80 | (p & 0x7F))
            p >>= 7
        body += bytes(reversed(enc))
    return _tlv(0x06, body)


def _bits(data, unused=0):
    return _tlv(0x03, bytes([unused]) + data)


def _time(t):
    if t.year < 2050:
        return _tlv(0x17, t.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, t.strftime("%Y%m%d%H%M%SZ").encode())


_ECDSA_SHA256 = _seq(_oid("1.2.840.10045.4.3.2"))
_TRUE = _tlv(0x01, b"\xff")


def _name():
    return _seq(
        _tlv(0x31, _seq(_oid("2.5.4.10"), _tlv(0x0C, b"plugkit"))),
        _tlv(0x31, _seq(_oid("2.5.4.3"), _tlv(0x0C, SERVER_NAME.encode()))),
    )


def _extension(oid, value, critical=False):
    return _seq(_oid(oid), *([_TRUE] if critical else []), _tlv(0x04, value))


class Identity:
    """A self-signed certificate and its key: der and cert_pem for the
    handshake and the server, key_pem (SEC 1) for the server."""

    def __init__(self, der, cert_pem, key_pem):
        self.der = der
        self.cert_pem = cert_pem
        self.key_pem = key_pem


def new_identity(now=None):
    """Makes a fresh key pair and self-signed certificate."""
    d = secrets.randbelow(_N - 1) + 1
    pub = _mul(d, _G)
    if not _on_curve(pub):
        raise AssertionError("P-256 arithmetic is broken")
    point = b"\x04" + pub[0].to_bytes(32, "big") + pub[1].to_bytes(32, "big")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    spki = _seq(_seq(_oid("1.2.840.10045.2.1"), _oid("1.2.840.10045.3.1.7")), _bits(point))
    # digitalSignature, keyEncipherment, keyAgreement, keyCertSign: bits
    # 0, 2, 4 and 5, so 0b10101100 with two unused bits.
    key_usage = _bits(b"\xac", unused=2)
    ext_key_usage = _seq(_oid("1.3.6.1.5.5.7.3.2"), _oid("1.3.6.1.5.5.7.3.1"))
    extensions = _seq(
        _extension("2.5.29.15", key_usage, critical=True),
        _extension("2.5.29.37", ext_key_usage),
        _extension("2.5.29.19", _seq(_TRUE), critical=True),
        _extension("2.5.29.17", _seq(_tlv(0x82, SERVER_NAME.encode()))),
    )
    tbs = _seq(
        _tlv(0xA0, _int(2)),  # version 3
        _int(secrets.randbits(127) + 1),
        _ECDSA_SHA256,
        _name(),
        _seq(_time(now - datetime.timedelta(seconds=30)), _time(now + _LIFETIME)),
        _name(),
        spki,
        _tlv(0xA3, extensions),
    )
    r, s = _sign(d, tbs)
    der = _seq(tbs, _ECDSA_SHA256, _bits(_seq(_int(r), _int(s))))
    key = _seq(
        _int(1),
        _tlv(0x04, d.to_bytes(32, "big")),
        _tlv(0xA0, _oid("1.2.840.10045.3.1.7")),
        _tlv(0xA1, _bits(point)),
    )
    return Identity(der, _pem("CERTIFICATE", der), _pem("EC PRIVATE KEY", key))


def _pem(kind, der):
    b64 = base64.b64encode(der).decode()
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return ("-----BEGIN %s-----\n%s\n-----END %s-----\n" % (kind, "\n".join(lines), kind)).encode()
