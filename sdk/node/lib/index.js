'use strict';
// plugkit's SDK for plugins written in Node.js. A plugin declares its
// implementations per (kind, major, name) in a Catalog and serves it:
//
//   const plugkit = require('@plugkit/sdk');
//   const files = require('./objectstore_descriptors'); // the kind's .proto files
//   const catalog = new plugkit.Catalog('1.0.0', [
//     new plugkit.Implementation({ kind: 'objectstore', major: 1, minor: 0, name: 'example.com/nodememory',
//       service: 'objectstore.v1.ObjectStore', server: new MemoryStore() }),
//   ], files);
//   plugkit.serve(catalog, ['PLUGKIT_EXAMPLE_PLUGIN', 'objectstore']);
//
// serve does everything docs/other-languages.md requires of a plugin (the
// cookie check, the version negotiation, a private unix socket, AutoMTLS,
// the handshake line, Catalog/Describe and the routing by name) and what it
// recommends (go-plugin's controller, stdio and broker, health, reflection,
// hclog JSON logs on standard error, exiting when the host dies).

const { Catalog, Implementation, status, PROTOCOL_VERSION, SDK_VERSION, NAME_KEY } = require('./catalog');
const { Logger } = require('./log');
const { REGISTRY, descriptorSet } = require('./proto');
const { Plugin, PluginError, serve, cookieNotice } = require('./serve');

module.exports = {
  Catalog, Implementation, Logger, Plugin, PluginError, serve, cookieNotice, status,
  PROTOCOL_VERSION, SDK_VERSION, NAME_KEY, descriptorSet,
  // grpc is the SDK's @grpc/grpc-js, for its status codes
  // (plugkit.grpc.status.NOT_FOUND) without a dependency of the plugin's own.
  grpc: require('@grpc/grpc-js'),
  // addFiles adds serialized FileDescriptorProtos (Buffers, each after its
  // imports), such as a kind's descriptor module, to the SDK's pool.
  addFiles: (files) => REGISTRY.add(files),
};
