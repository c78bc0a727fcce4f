'use strict';
// The descriptors: every .proto file the plugin serves, as serialized
// FileDescriptorProtos (the SDK's own from descriptors.js, a kind's from its
// author's module, made by `go run ./sdk/cmd/descriptors` or taken from
// protoc's --descriptor_set_out), loaded with @grpc/proto-loader: nothing
// is generated or parsed from .proto text at run time.

const protoLoader = require('@grpc/proto-loader');
const { FileDescriptorProto } = require('protobufjs/ext/descriptor');
const sdkFiles = require('./descriptors');

const LOADER_OPTIONS = { keepCase: true, longs: Number, enums: Number, defaults: true, oneofs: true, bytes: Buffer };

class Registry {
  constructor() {
    this.files = new Map(); // name -> {fdp: decoded FileDescriptorProto, data: Buffer}
    this.symbols = new Map(); // full name -> file name, for reflection
    this.definition = null;
    this.add(sdkFiles);
  }

  // add adds serialized FileDescriptorProtos (Buffers), each after its
  // imports; a file already added is skipped.
  add(files) {
    for (const data of files) {
      const fdp = FileDescriptorProto.decode(data);
      if (this.files.has(fdp.name)) continue;
      for (const d of fdp.dependency) {
        if (!this.files.has(d)) throw new Error(`${fdp.name} imports ${d}, which was not added before it`);
      }
      this.files.set(fdp.name, { fdp, data: Buffer.from(data) });
      this.index(fdp);
    }
    this.definition = null;
  }

  // index records the full names fdp defines: messages (nested too),
  // enums, services and their methods.
  index(fdp) {
    const add = (name) => this.symbols.set(name, fdp.name);
    const messages = (msgs, scope) => {
      for (const m of msgs) {
        const name = scope + m.name;
        add(name);
        for (const e of m.enumType) add(`${name}.${e.name}`);
        messages(m.nestedType, name + '.');
      }
    };
    const prefix = fdp.package ? fdp.package + '.' : '';
    messages(fdp.messageType, prefix);
    for (const e of fdp.enumType) add(prefix + e.name);
    for (const s of fdp.service) {
      add(prefix + s.name);
      for (const m of s.method) add(`${prefix}${s.name}.${m.name}`);
    }
  }

  // packageDefinition returns proto-loader's definitions of everything added.
  packageDefinition() {
    if (!this.definition) {
      const file = [...this.files.values()].map((f) => f.fdp);
      this.definition = protoLoader.loadFileDescriptorSetFromObject({ file }, LOADER_OPTIONS);
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
      todo.push(...f.fdp.dependency);
    }
    return out;
  }
}

const REGISTRY = new Registry();

module.exports = { REGISTRY, Registry };
