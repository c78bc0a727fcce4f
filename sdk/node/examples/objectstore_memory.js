'use strict';
// An in-memory object store served as objectstore v1 and v2 (with the
// "presign" capability of 2.1): the Node counterpart of the Go example's
// memory backend, for the example plugins next to this file.

const crypto = require('crypto');
const grpc = require('@grpc/grpc-js');
const { status } = require('../lib');

const KIND = 'objectstore';
const COOKIE = ['PLUGKIT_EXAMPLE_PLUGIN', 'objectstore'];
const CAP_PRESIGN = 'presign';
const CHUNK_SIZE = 256 << 10; // Get's chunks, as the Go backend sends them

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');
// answer passes a unary call's callback what fn returns, or the status it throws.
const answer = (cb, fn) => {
  let resp;
  try {
    resp = fn();
  } catch (e) {
    return cb(e);
  }
  cb(null, resp);
};

// StoreV1 serves objectstore.v1.ObjectStore from a Map.
class StoreV1 {
  constructor(objects = new Map()) {
    this.objects = objects;
  }

  get(key, op) {
    const data = this.objects.get(key);
    if (data === undefined) throw status(grpc.status.NOT_FOUND, `${op}: no object ${JSON.stringify(key)}`);
    return data;
  }

  Init(call, cb) {
    // What a plugin prints reaches the host over go-plugin's stdio stream.
    console.log(`objectstore: Init with ${Object.keys(call.request.config).length} settings`);
    cb(null, {});
  }

  Put(call, cb) {
    let key = null;
    let failed = false;
    const chunks = [];
    const fail = (msg) => {
      if (!failed) cb(status(grpc.status.INVALID_ARGUMENT, msg));
      failed = true;
    };
    call.on('data', (req) => {
      if (key === null) {
        if (req.part !== 'key' || !req.key) return fail('put: the first message must carry a non-empty key');
        key = req.key;
      } else if (req.part === 'key') {
        fail('put: only the first message may carry a key');
      } else {
        chunks.push(req.chunk);
      }
    });
    call.on('end', () => {
      if (failed) return;
      if (key === null) return fail('put: reading the key: EOF');
      const data = Buffer.concat(chunks);
      this.objects.set(key, data);
      cb(null, { key, size: data.length, sha256: sha256(data) });
    });
  }

  Get(call) {
    let data;
    try {
      data = this.get(call.request.key, 'get');
    } catch (e) {
      call.emit('error', e);
      return;
    }
    for (let i = 0; i < data.length; i += CHUNK_SIZE) call.write({ chunk: data.subarray(i, i + CHUNK_SIZE) });
    call.end();
  }

  List(call, cb) {
    cb(null, { keys: [...this.objects.keys()].filter((k) => k.startsWith(call.request.prefix)).sort() });
  }

  Delete(call, cb) {
    if (!this.objects.delete(call.request.key)) return cb(status(grpc.status.NOT_FOUND, `delete: no object ${JSON.stringify(call.request.key)}`));
    cb(null, {});
  }

  Exists(call, cb) {
    cb(null, { exists: this.objects.has(call.request.key) });
  }
}

// StoreV2 serves objectstore.v2.ObjectStore: v1's calls, Stat, Copy and
// Presign (minor 1, capability "presign").
class StoreV2 extends StoreV1 {
  Stat(call, cb) {
    answer(cb, () => {
      const data = this.get(call.request.key, 'stat');
      return { key: call.request.key, size: data.length, sha256: sha256(data) };
    });
  }

  Copy(call, cb) {
    answer(cb, () => {
      const data = this.get(call.request.source, 'copy');
      this.objects.set(call.request.destination, data);
      return { size: data.length };
    });
  }

  Presign(call, cb) {
    answer(cb, () => {
      this.get(call.request.key, 'presign');
      return { url: `nodememory://${call.request.key}?ttl=${call.request.ttl_seconds || 900}s` };
    });
  }
}

module.exports = { KIND, COOKIE, CAP_PRESIGN, StoreV1, StoreV2 };
