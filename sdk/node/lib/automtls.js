'use strict';
// AutoMTLS: a fresh self-signed ECDSA P-256 certificate. Node's crypto makes
// the key and the signature; it has no API to build a certificate, so the
// DER is written here, shaped as plugkit's Go side (automtls.New) makes it:
// CN and DNS name "localhost", organisation "plugkit", a CA, digital
// signature, key encipherment, key agreement and certificate signing,
// client and server authentication, valid from 30 s ago for ten years.

const crypto = require('crypto');

const SERVER_NAME = 'localhost';
const LIFETIME_MS = 10 * 365 * 24 * 3600 * 1000;

function tlv(tag, body) {
  const n = body.length;
  let len;
  if (n < 0x80) {
    len = Buffer.from([n]);
  } else {
    const bytes = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    len = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...items) => tlv(0x30, Buffer.concat(items));

function int(buf) {
  // A positive INTEGER from big-endian bytes.
  let i = 0;
  while (i < buf.length - 1 && buf[i] === 0) i++;
  let b = buf.subarray(i);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted) {
  const parts = dotted.split('.').map(Number);
  const body = [40 * parts[0] + parts[1]];
  for (let p of parts.slice(2)) {
    const enc = [p & 0x7f];
    p = Math.floor(p / 128);
    while (p > 0) {
      enc.unshift(0x80 | (p & 0x7f));
      p = Math.floor(p / 128);
    }
    body.push(...enc);
  }
  return tlv(0x06, Buffer.from(body));
}

const bits = (data, unused = 0) => tlv(0x03, Buffer.concat([Buffer.from([unused]), data]));

function time(d) {
  const pad = (n) => String(n).padStart(2, '0');
  const s = pad(d.getUTCMonth() + 1) + pad(d.getUTCDate()) + pad(d.getUTCHours()) + pad(d.getUTCMinutes()) + pad(d.getUTCSeconds()) + 'Z';
  const y = d.getUTCFullYear();
  if (y < 2050) return tlv(0x17, Buffer.from(pad(y % 100) + s));
  return tlv(0x18, Buffer.from(String(y) + s));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const TRUE = tlv(0x01, Buffer.from([0xff]));

function name() {
  return seq(
    tlv(0x31, seq(oid('2.5.4.10'), tlv(0x0c, Buffer.from('plugkit')))),
    tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(SERVER_NAME)))),
  );
}

function extension(id, value, critical) {
  return critical ? seq(oid(id), TRUE, tlv(0x04, value)) : seq(oid(id), tlv(0x04, value));
}

// newIdentity makes a key pair and a self-signed certificate: der (for the
// handshake line), certPem and keyPem (SEC 1, for the server).
function newIdentity(now = new Date()) {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const serial = crypto.randomBytes(16);
  serial[0] &= 0x7f;
  serial[15] |= 1; // never zero
  // digitalSignature, keyEncipherment, keyAgreement, keyCertSign: bits 0,
  // 2, 4 and 5, so 0b10101100 with two unused bits.
  const keyUsage = bits(Buffer.from([0xac]), 2);
  const extKeyUsage = seq(oid('1.3.6.1.5.5.7.3.2'), oid('1.3.6.1.5.5.7.3.1'));
  const extensions = seq(
    extension('2.5.29.15', keyUsage, true),
    extension('2.5.29.37', extKeyUsage, false),
    extension('2.5.29.19', seq(TRUE), true),
    extension('2.5.29.17', seq(tlv(0x82, Buffer.from(SERVER_NAME))), false),
  );
  const tbs = seq(
    tlv(0xa0, int(Buffer.from([2]))), // version 3
    int(serial),
    ECDSA_SHA256,
    name(),
    seq(time(new Date(now.getTime() - 30000)), time(new Date(now.getTime() + LIFETIME_MS))),
    name(),
    spki,
    tlv(0xa3, extensions),
  );
  const signature = crypto.sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der.toString('base64').match(/.{1,64}/g).join('\n');
  return {
    der,
    certPem: Buffer.from(`-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`),
    keyPem: Buffer.from(privateKey.export({ type: 'sec1', format: 'pem' })),
  };
}

module.exports = { newIdentity, SERVER_NAME };
