'use strict';
// The descriptors: every .proto file the plugin serves, as serialized
// FileDescriptorProtos (the SDK's own from descriptors.js, a kind's from its
// author's module, made by `go run ./sdk/cmd/descriptors` or taken from
// protoc's --descriptor_set_out), loaded with @grpc/proto-loader: nothing
// is generated or parsed from .proto text at run time.

const fs = require('fs');
const path = require('path');
const { fileURLToPath } = require('url');
const protoLoader = require('@grpc/proto-loader');
const { Reader } = require('protobufjs');
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

// mainDir is the directory of the program's main script, links followed
// (Node resolves them for a CommonJS main module; an ES module's is
// process.argv[1]), or the working directory when there is no script.
function mainDir() {
  if (require.main && require.main.filename) return path.dirname(require.main.filename);
  try {
    if (process.argv[1]) return path.dirname(fs.realpathSync(process.argv[1]));
  } catch (e) {
    // node -e, the REPL: no script.
  }
  return process.cwd();
}

// descriptorSet returns the files of a FileDescriptorSet, serialized
// (Buffers), each after its imports: what new Catalog's files and addFiles
// take. source is the set's bytes or the path of a file holding it: the
// output of `buf build -o image.binpb` (a buf image is a FileDescriptorSet)
// or of `protoc --include_imports --descriptor_set_out=FILE`. A relative
// path is taken from the directory of the plugin's script, not from the
// working directory, which is the host's; a file: URL (an ES module's
// new URL('descriptors/kind.binpb', import.meta.url)) is its file. Each
// file keeps its bytes as the set holds them.
function descriptorSet(source) {
  let data = source;
  let where = 'the descriptor set';
  if (source instanceof URL) {
    where = fileURLToPath(source);
    data = fs.readFileSync(where);
  } else if (!(source instanceof Uint8Array)) {
    where = path.resolve(mainDir(), String(source));
    data = fs.readFileSync(where);
  }
  const byName = new Map();
  const order = [];
  try {
    // FileDescriptorSet: repeated FileDescriptorProto file = 1.
    const r = Reader.create(data);
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag !== (1 << 3 | 2)) {
        r.skipType(tag & 7);
        continue;
      }
      const raw = Buffer.from(r.bytes());
      const fdp = FileDescriptorProto.decode(raw);
      if (!byName.has(fdp.name)) {
        byName.set(fdp.name, { fdp, raw });
        order.push(fdp.name);
      }
    }
  } catch (e) {
    throw new Error(`${where} is not a FileDescriptorSet (${e.message}): make it with buf build -o FILE.binpb or protoc --include_imports --descriptor_set_out=FILE`);
  }
  if (order.length === 0) throw new Error(`${where} holds no files: build it from the kind's .proto files`);
  const out = [];
  const done = new Set();
  const visiting = new Set();
  const visit = (name, importer) => {
    if (done.has(name)) return;
    const f = byName.get(name);
    if (!f) {
      if (REGISTRY.files.has(name)) return;
      throw new Error(`${where}: ${importer} imports ${name}, which the set lacks: build it with its imports (buf build includes them unless --exclude-imports; protoc needs --include_imports)`);
    }
    if (visiting.has(name)) throw new Error(`${where}: ${name} imports itself through ${importer}`);
    visiting.add(name);
    for (const d of f.fdp.dependency) visit(d, name);
    visiting.delete(name);
    done.add(name);
    out.push(f.raw);
  };
  for (const name of order) visit(name, name);
  return out;
}

module.exports = { REGISTRY, Registry, descriptorSet };
