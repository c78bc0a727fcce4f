#!/usr/bin/env node
'use strict';
// An objectstore v1 plugin in Node: example.com/nodememory, in memory. Put
// it (or a link to it) in a plugin directory.

const plugkit = require('../lib');
const files = require('./objectstore_descriptors');
const { COOKIE, KIND, StoreV1 } = require('./objectstore_memory');

const VERSION = '1.0.0';

function catalog() {
  return new plugkit.Catalog(VERSION, [
    new plugkit.Implementation({ kind: KIND, major: 1, minor: 0, name: 'example.com/nodememory', service: 'objectstore.v1.ObjectStore', server: new StoreV1() }),
  ], files);
}

if (require.main === module) plugkit.serve(catalog(), COOKIE);

module.exports = { catalog };
