'use strict';
// The catalog: implementations per (kind, major, name), Describe, and the
// routing of each call to the implementation its metadata names, as the Go
// package catalog does.

const grpc = require('@grpc/grpc-js');
const { REGISTRY } = require('./proto');

// PROTOCOL_VERSION is the app protocol version of a plugin that serves a
// catalog, whatever its kinds' majors (Go: wire.CatalogProtocolVersion).
const PROTOCOL_VERSION = 1;
// SDK_VERSION is the plugkit version the plugin reports in Describe.
const SDK_VERSION = '0.1.0';
// NAME_KEY is the gRPC metadata key naming the implementation a call is for.
const NAME_KEY = 'plugkit-name';
const CATALOG_SERVICE = 'plugkit.catalog.v1.Catalog';

// Implementation is one (kind, major, name) a plugin serves. service is the
// full name of the major's gRPC service ("objectstore.v2.ObjectStore");
// server has one grpc-js handler per RPC of it, named as the RPC (Put,
// Get, ...). capabilities are the minor's optional features it offers.
class Implementation {
  constructor({ kind, major, minor = 0, name, service, server, capabilities = [] }) {
    Object.assign(this, { kind, major, minor, name, service, server, capabilities: [...capabilities] });
  }
}

class Group {
  constructor(im) {
    this.kind = im.kind;
    this.major = im.major;
    this.minor = im.minor;
    this.service = im.service;
    this.caps = [...im.capabilities];
    this.impls = new Map();
  }

  names() {
    return [...this.impls.keys()].sort().join(', ');
  }

  // pick returns the implementation a call names, or throws a gRPC error.
  pick(metadata) {
    const name = (metadata && metadata.get(NAME_KEY)[0]) || '';
    if (!name) {
      if (this.impls.size === 1) return this.impls.values().next().value;
      throw status(grpc.status.INVALID_ARGUMENT,
        `${this.service}: this plugin serves several implementations (${this.names()}); name one in the ${JSON.stringify(NAME_KEY)} metadata`);
    }
    const impl = this.impls.get(String(name));
    if (!impl) {
      throw status(grpc.status.NOT_FOUND, `${this.service}: no implementation named ${JSON.stringify(String(name))} here; this plugin serves ${this.names()}`);
    }
    return impl;
  }
}

// status makes the error a grpc-js handler returns: a code and a message.
function status(code, details) {
  const e = new Error(details);
  e.code = code;
  e.details = details;
  return e;
}

// Catalog is the implementations a plugin serves. files are the kinds'
// serialized FileDescriptorProtos, each after its imports (a module made by
// go run ./sdk/cmd/descriptors, or protoc's --descriptor_set_out). Mistakes
// throw, saying what to fix, as Go's catalog.New does.
class Catalog {
  constructor(pluginVersion, implementations, files = []) {
    REGISTRY.add(files);
    if (!implementations || implementations.length === 0) {
      throw new Error('catalog: no implementations: declare at least one Implementation');
    }
    this.version = pluginVersion;
    const byKey = new Map();
    const groups = [];
    for (const im of implementations) {
      const where = `catalog: ${im.kind} v${im.major} ${JSON.stringify(im.name || '')}`;
      if (!im.kind || /[ /]/.test(im.kind)) throw new Error(`${where}: kind must be a non-empty word`);
      if (!im.name) throw new Error(`${where}: name is empty; use a qualified name such as example.com/fs`);
      if (im.major < 0 || im.minor < 0) throw new Error(`${where}: versions must not be negative`);
      if (!im.service || !im.server) throw new Error(`${where}: service and server are required`);
      const def = REGISTRY.service(im.service);
      if (!def) throw new Error(`${where}: service ${im.service} is not in the descriptors given: pass the kind's files to new Catalog(version, impls, files)`);
      const missing = Object.keys(def).filter((m) => typeof im.server[m] !== 'function');
      if (missing.length) throw new Error(`${where}: ${im.server.constructor.name} does not implement ${im.service}: it lacks ${missing.join(', ')}`);
      const key = `${im.kind}\u0000${im.major}`;
      let g = byKey.get(key);
      if (!g) {
        g = new Group(im);
        byKey.set(key, g);
        groups.push(g);
      }
      if (g.service !== im.service) throw new Error(`${where}: service ${im.service}, but another implementation of the same major uses ${g.service}`);
      if (g.impls.has(im.name)) throw new Error(`${where}: declared twice`);
      g.impls.set(im.name, im.server);
      // A major's minor and capabilities are what every implementation of
      // it offers (a Group starts from the first).
      g.minor = Math.min(g.minor, im.minor);
      g.caps = g.caps.filter((c) => im.capabilities.includes(c));
    }
    for (const g of groups) g.caps = [...new Set(g.caps)].sort();
    groups.sort((a, b) => (a.kind !== b.kind ? (a.kind < b.kind ? -1 : 1) : b.major - a.major));
    this.groups = groups;
  }

  // describe returns what Catalog/Describe answers.
  describe() {
    const resp = { plugin_version: this.version, sdk_version: SDK_VERSION, kinds: [] };
    let kind = null;
    for (const g of this.groups) {
      if (!kind || kind.name !== g.kind) {
        kind = { name: g.kind, majors: [] };
        resp.kinds.push(kind);
      }
      kind.majors.push({ major: g.major, minor: g.minor, service: g.service, capabilities: g.caps, names: [...g.impls.keys()].sort() });
    }
    return resp;
  }

  // addTo adds the catalog service and one router per (kind, major) to a
  // grpc-js server.
  addTo(server) {
    server.addService(REGISTRY.service(CATALOG_SERVICE), { Describe: (call, cb) => cb(null, this.describe()) });
    for (const g of this.groups) {
      const def = REGISTRY.service(g.service);
      const handlers = {};
      for (const [m, attrs] of Object.entries(def)) {
        handlers[m] = router(g, m, attrs);
      }
      server.addService(def, handlers);
    }
  }
}

function router(group, method, attrs) {
  if (attrs.responseStream) {
    // Server and bidi streams: no callback; an error ends the call.
    return (call) => {
      let impl;
      try {
        impl = group.pick(call.metadata);
      } catch (e) {
        call.emit('error', e);
        return;
      }
      impl[method](call);
    };
  }
  return (call, callback) => {
    let impl;
    try {
      impl = group.pick(call.metadata);
    } catch (e) {
      callback(e);
      return;
    }
    impl[method](call, callback);
  };
}

module.exports = { Catalog, Implementation, status, PROTOCOL_VERSION, SDK_VERSION, NAME_KEY, CATALOG_SERVICE };
