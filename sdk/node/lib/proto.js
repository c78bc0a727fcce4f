'use strict';
// The descriptors: every .proto file the plugin serves, as serialized
// FileDescriptorProtos (the SDK's own from descriptors.js, a kind's from its
// author's module, both made by `go run ./sdk/cmd/descriptors`), loaded with
// @grpc/proto-loader: nothing is generated or parsed from .proto text at
// run time.

const protoLoader = require('@grpc/proto-loader');
const sdkFiles = require('./descriptors');

const LOADER_OPTIONS = { keepCase: true, longs: Number, enums: Number, defaults: true, oneofs: true, bytes: Buffer };

class Registry {
  constructor() {
    this.files = new Map(); // name -> {name, deps, symbols, data: Buffer}
    this.symbols = new Map(); // full name -> file name
    this.definition = null;
    this.add(sdkFiles);
  }

  // add adds files ({name, deps, symbols, data (base64)}), each after its
  // imports; a file already added is skipped.
  add(files) {
    for (const f of files) {
      if (this.files.has(f.name)) continue;
      for (const d of f.deps) {
        if (!this.files.has(d)) throw new Error(`${f.name} imports ${d}, which was not added before it`);
      }
      this.files.set(f.name, { name: f.name, deps: f.deps, symbols: f.symbols, data: Buffer.from(f.data, 'base64') });
      for (const s of f.symbols) this.symbols.set(s, f.name);
    }
    this.definition = null;
  }

  // packageDefinition returns proto-loader's definitions of everything added.
  packageDefinition() {
    if (!this.definition) {
      const parts = [];
      for (const f of this.files.values()) {
        parts.push(Buffer.from([0x0a]), varint(f.data.length), f.data); // FileDescriptorSet.file
      }
      this.definition = protoLoader.loadFileDescriptorSetFromBuffer(Buffer.concat(parts), LOADER_OPTIONS);
    }
    return this.definition;
  }

  service(name) {
    const s = this.packageDefinition()[name];
    if (!s || s.format !== undefined) return undefined; // a message, not a service
    return s;
  }

  // closure returns the serialized file and every file it imports,
  // directly or not, the file first.
  closure(name) {
    const out = [];
    const seen = new Set();
    const todo = [name];
    while (todo.length) {
      const n = todo.shift();
      if (seen.has(n)) continue;
      seen.add(n);
      const f = this.files.get(n);
      out.push(f.data);
      todo.push(...f.deps);
    }
    return out;
  }
}

function varint(n) {
  const b = [];
  while (n > 0x7f) {
    b.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  b.push(n);
  return Buffer.from(b);
}

const REGISTRY = new Registry();

module.exports = { REGISTRY, Registry };
