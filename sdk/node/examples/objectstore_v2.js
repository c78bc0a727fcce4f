#!/usr/bin/env node
'use strict';
// An objectstore v2.1 plugin in Node, with the "presign" capability:
// example.com/nodememory2, in memory. Put it (or a link to it) in a plugin
// directory.

const plugkit = require('../lib');
const files = require('./objectstore_descriptors');
const { CAP_PRESIGN, COOKIE, KIND, StoreV2 } = require('./objectstore_memory');

const VERSION = '2.1.0';

function catalog() {
  return new plugkit.Catalog(VERSION, [
    new plugkit.Implementation({
      kind: KIND, major: 2, minor: 1, name: 'example.com/nodememory2', service: 'objectstore.v2.ObjectStore', server: new StoreV2(), capabilities: [CAP_PRESIGN],
    }),
  ], files);
}

if (require.main === module) plugkit.serve(catalog(), COOKIE);

module.exports = { catalog };
