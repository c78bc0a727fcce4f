#!/usr/bin/env node
'use strict';
// A thermostat plugin in Node: the installed SDK and the kind's buf image
// (descriptors/thermostat.binpb beside this file), nothing else.

const plugkit = require('@plugkit/sdk');

const MAX_CELSIUS = 40;

class Thermostat {
  constructor() {
    this.celsius = 20;
  }

  Set(call, callback) {
    const { celsius } = call.request;
    if (celsius > MAX_CELSIUS) {
      callback(plugkit.status(plugkit.grpc.status.INVALID_ARGUMENT, `set: ${celsius} °C is above ${MAX_CELSIUS} °C`));
      return;
    }
    const previous = this.celsius;
    this.celsius = celsius;
    callback(null, { previous_celsius: previous, changed_at: { seconds: 1700000000 } });
  }

  Readings(call) {
    for (let i = 0; i < call.request.count; i++) call.write({ seq: i + 1, celsius: this.celsius });
    call.end();
  }
}

const catalog = new plugkit.Catalog('1.0.0', [
  new plugkit.Implementation({ kind: 'thermostat', major: 1, minor: 0, name: 'example.com/nodethermostat',
    service: 'thermostat.v1.Thermostat', server: new Thermostat() }),
], plugkit.descriptorSet('descriptors/thermostat.binpb'));
plugkit.serve(catalog, ['PLUGKIT_THERMOSTAT', 'thermostat']);
