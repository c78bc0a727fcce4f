'use strict';
// The memory budget of the requests in flight, as a Go plugin service's
// (PLUGKIT_MAX_INFLIGHT_BYTES, plugin.ServiceLimits.MaxInflightBytes).
//
// grpc-js hands a request's bytes to the method's requestDeserialize before
// any handler code runs, so the budget is charged there: decoding a message
// takes room for READ_COPIES times its size (the bytes, the decoded object,
// and what decoding holds meanwhile); once decoded, a unary or
// server-streaming call's request counts its own size until the call ends
// (a client stream's messages, while they are decoded). A message that does
// not fit is not decoded: a unary or server-streaming call ends with
// RESOURCE_EXHAUSTED at once, a client stream with INTERNAL (grpc-js's
// answer to a deserializer that throws). What the budget cannot bound:
// messages grpc-js is still receiving, each at most the maximum message size.

const grpc = require('@grpc/grpc-js');

const ENV_MAX_INFLIGHT_BYTES = 'PLUGKIT_MAX_INFLIGHT_BYTES';
const DEFAULT_MAX_INFLIGHT_BYTES = 256 * 1024 * 1024;
const READ_COPIES = 3;

const REFUSED = Symbol('plugkit.refused');

class Budget {
  constructor(limit) {
    this.limit = limit;
    this.used = 0;
    this.charges = new WeakMap(); // decoded request -> its bytes
    this.leftovers = new FinalizationRegistry((n) => this.give(n));
  }

  take(n) {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  give(n) {
    this.used -= n;
  }

  refusal(n) {
    const mib = (x) => Math.floor(x / (1 << 20));
    return {
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: `plugin: a request message of ${n} bytes needs ${mib(READ_COPIES * n)} MiB of room to decode, and the requests in flight (${mib(this.used)} MiB) leave less of the plugin's memory budget of ${mib(this.limit)} MiB (${ENV_MAX_INFLIGHT_BYTES}): retry later with backoff, send smaller messages, or have the operator raise ${ENV_MAX_INFLIGHT_BYTES}`,
    };
  }

  deserializer(parse, keep) {
    return (buf) => {
      const n = buf.length;
      if (!this.take(READ_COPIES * n)) {
        if (!keep) throw new Error(this.refusal(n).details);
        return { [REFUSED]: this.refusal(n) };
      }
      let msg;
      try {
        msg = parse(buf);
      } catch (e) {
        this.give(READ_COPIES * n);
        throw e;
      }
      if (!keep || msg === null || typeof msg !== 'object') {
        this.give(READ_COPIES * n);
        return msg;
      }
      this.give((READ_COPIES - 1) * n);
      this.charges.set(msg, n);
      this.leftovers.register(msg, n, msg);
      return msg;
    };
  }

  // release gives back what the request of a call holds, once.
  release(msg) {
    const n = this.charges.get(msg);
    if (n === undefined) return;
    this.charges.delete(msg);
    this.leftovers.unregister(msg);
    this.give(n);
  }

  // wrap returns a service definition and its handlers with the requests
  // charged.
  wrap(def, impl) {
    const outDef = {};
    const outImpl = {};
    for (const [name, attrs] of Object.entries(def)) {
      const keep = !attrs.requestStream;
      outDef[name] = { ...attrs, requestDeserialize: this.deserializer(attrs.requestDeserialize, keep) };
      const h = impl[name];
      if (typeof h !== 'function' || !keep) {
        if (h !== undefined) outImpl[name] = h;
        continue;
      }
      if (attrs.responseStream) {
        outImpl[name] = (call) => {
          const req = call.request;
          if (req && req[REFUSED]) {
            call.emit('error', req[REFUSED]);
            return;
          }
          const done = () => this.release(req);
          for (const ev of ['finish', 'cancelled', 'error', 'close']) call.once(ev, done);
          h(call);
        };
      } else {
        outImpl[name] = (call, callback) => {
          const req = call.request;
          if (req && req[REFUSED]) {
            callback(req[REFUSED]);
            return;
          }
          call.once('cancelled', () => this.release(req));
          h(call, (...args) => {
            this.release(req);
            callback(...args);
          });
        };
      }
    }
    return [outDef, outImpl];
  }
}

module.exports = { Budget, ENV_MAX_INFLIGHT_BYTES, DEFAULT_MAX_INFLIGHT_BYTES, READ_COPIES };
