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
// answer to a deserializer that throws).
//
// A message's size is not known before grpc-js reads it, so a read (from
// the call's request for a message until that message is decoded) reserves
// the most one may take, READ_COPIES times the maximum message size, as a
// Go service does when it cannot see sizes: the budget allows
// max(1, floor(budget / that)) reads at once (one by default), in turn;
// a unary or server-streaming call's request only (a client stream's next
// message may never come, and must not hold the turn meanwhile).
// A call waiting for its turn has its HTTP/2 stream paused, so it holds no
// more than a flow-control window (64 KiB). So a plugin's requests take at
// most the budget plus those reads (448 MiB by default).

const grpc = require('@grpc/grpc-js');

const ENV_MAX_INFLIGHT_BYTES = 'PLUGKIT_MAX_INFLIGHT_BYTES';
const DEFAULT_MAX_INFLIGHT_BYTES = 256 * 1024 * 1024;
const READ_COPIES = 3;

const REFUSED = Symbol('plugkit.refused');

class Budget {
  constructor(limit, maxMessageSize) {
    this.limit = limit;
    this.used = 0;
    this.reads = Math.max(1, Math.floor(limit / (READ_COPIES * maxMessageSize))); // free read turns
    this.waiting = []; // calls waiting for a turn, first come first served
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

  // readTurn runs start when a read may begin, and returns the function
  // that ends the read (once; also when the call ends before it starts).
  readTurn(start) {
    let state = 'waiting';
    const begin = () => {
      state = 'reading';
      start();
    };
    if (this.reads > 0) {
      this.reads--;
      begin();
    } else {
      this.waiting.push(begin);
    }
    return () => {
      if (state === 'waiting') {
        const i = this.waiting.indexOf(begin);
        if (i >= 0) this.waiting.splice(i, 1);
      } else if (state === 'reading') {
        const next = this.waiting.shift();
        if (next) next();
        else this.reads++;
      }
      state = 'done';
    };
  }

  // interceptor is the grpc-js server interceptor that makes each read of
  // a request message wait for its turn.
  interceptor() {
    const budget = this;
    return (method, call) => {
      // A client stream's next message may come much later, or never:
      // its reads do not wait for a turn (each message is charged while
      // decoded).
      if (method.requestStream) return call;
      let end = null;
      const done = () => {
        if (end) end();
        end = null;
      };
      const ic = new grpc.ServerInterceptingCall(call, {
        start(next) {
          next(new grpc.ServerListenerBuilder()
            .withOnReceiveMessage((msg, nextMsg) => {
              done();
              nextMsg(msg);
            })
            .withOnReceiveHalfClose((nextHalf) => {
              done();
              nextHalf();
            })
            .withOnCancel(() => done())
            .build());
        },
        sendStatus(st, nextStatus) {
          done();
          nextStatus(st);
        },
      });
      let reads = 0;
      ic.startRead = () => {
        done();
        // The second read only takes the half-close (grpc-js refuses a
        // second message).
        if (reads++ > 0) {
          call.startRead();
          return;
        }
        end = budget.readTurn(() => call.startRead());
      };
      return ic;
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
