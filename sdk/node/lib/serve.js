'use strict';
// Serving a catalog as a plugin: the cookie, the version negotiation, the
// socket, AutoMTLS, the handshake line, the services every plugin serves
// beside its kinds (gRPC health, go-plugin's GRPCController, GRPCStdio and
// GRPCBroker, server reflection v1 and v1alpha), and the stop (the host's
// Shutdown, SIGTERM, or the host's death).

const fs = require('fs');
const os = require('os');
const path = require('path');
const grpc = require('@grpc/grpc-js');

const { newIdentity } = require('./automtls');
const { Budget, DEFAULT_MAX_INFLIGHT_BYTES, ENV_MAX_INFLIGHT_BYTES, READ_COPIES } = require('./budget');
const { PROTOCOL_VERSION, CATALOG_SERVICE, status } = require('./catalog');
const { Logger } = require('./log');
const { REGISTRY } = require('./proto');

const ENV_PROTOCOL_VERSIONS = 'PLUGIN_PROTOCOL_VERSIONS';
const ENV_CLIENT_CERT = 'PLUGIN_CLIENT_CERT';
const ENV_UNIX_SOCKET_DIR = 'PLUGIN_UNIX_SOCKET_DIR';
const ENV_UNIX_SOCKET_GROUP = 'PLUGIN_UNIX_SOCKET_GROUP';
const ENV_NETWORK = 'PLUGKIT_NETWORK';
const ENV_MIN_PORT = 'PLUGIN_MIN_PORT';
const ENV_MAX_PORT = 'PLUGIN_MAX_PORT';

const CORE_VERSION = 1;
const MAX_UNIX_PATH = 103;
const MAX_MESSAGE_SIZE = 64 << 20;
const SHUTDOWN_GRACE_MS = 1500;
const PARENT_POLL_MS = 100;
const ENV_HOST_PID = 'PLUGKIT_HOST_PID'; // a plugkit host's pid, when it runs the plugin directly

// The parent this process had at its start (this module's load), which the
// watch compares with: a host may die at any step of the handshake, before
// serve even begins.
const PARENT_AT_START = process.ppid;

// hostGoneBeforeStart: the host that named itself in PLUGKIT_HOST_PID is
// not the parent this process started with and no longer exists: it died
// before this process could record it.
function hostGoneBeforeStart(env, parent) {
  const pid = Number(env[ENV_HOST_PID]);
  if (!Number.isInteger(pid) || pid <= 0 || pid === parent) return false;
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`);
  } catch (err) {
    if (err.code === 'ENOENT') return true;
    try {
      process.kill(pid, 0);
    } catch (e) {
      return e.code === 'ESRCH';
    }
    return false;
  }
  const i = stat.lastIndexOf(')');
  const state = i >= 0 ? String.fromCharCode(stat[i + 2]) : '';
  return state === 'Z' || state === 'X';
}
const PLUGIN_HEALTH = 'plugin';
const SERVING = 1;
const NOT_SERVING = 2;
const SERVICE_UNKNOWN = 3;

class PluginError extends Error {}

// cookieNotice is the notice for a person who ran the plugin by hand, as
// Go's handshake.CookieError words it.
function cookieNotice(key) {
  return 'this binary is a plugin: it is not meant to be run by hand. ' +
    `Its host program starts it when it needs it (the host sets ${key}). ` +
    `To look inside it, run: plugkit inspect PATH --cookie ${key}=VALUE`;
}

// formatVersions writes versions as Go prints an []int: "[5 6]".
const formatVersions = (vs) => '[' + [...vs].sort((a, b) => a - b).join(' ') + ']';
// goQuote quotes a string as Go's %q does: control and other unprintable
// characters escaped. (Node reads an environment value that is not UTF-8
// with U+FFFD for each bad byte: that is written \ufffd.)
const goQuote = (s) => '"' + String(s).replace(/[\\"]|[\p{C}\p{Zl}\p{Zp}\ufffd]/gu, (c) => {
  const esc = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\v': '\\v' }[c];
  if (esc) return esc;
  const o = c.codePointAt(0);
  if (o < 0x80) return '\\x' + o.toString(16).padStart(2, '0');
  if (o <= 0xffff) return '\\u' + o.toString(16).padStart(4, '0');
  return '\\U' + o.toString(16).padStart(8, '0');
}) + '"';

// portEnv reads a port variable as Go's handshake.ReadEnv does; unset or
// empty means 0 (any free port).
function portEnv(env, key) {
  const v = env[key] || '';
  if (!v) return 0;
  if (!/^[+-]?[0-9]+$/.test(v) || Number(v) < 0 || Number(v) > 65535) throw new PluginError(`${key}=${goQuote(v)} is not a port number (0-65535)`);
  return Number(v);
}

// inflightEnv is the in-flight budget, from PLUGKIT_MAX_INFLIGHT_BYTES as a
// Go plugin service reads it: 256 MiB unless set.
function inflightEnv(env) {
  const v = env[ENV_MAX_INFLIGHT_BYTES] || '';
  if (!v) return Math.max(DEFAULT_MAX_INFLIGHT_BYTES, READ_COPIES * MAX_MESSAGE_SIZE);
  if (!/^[+-]?[0-9]+$/.test(v) || !(Number(v) > 0) || !Number.isSafeInteger(Number(v))) throw new PluginError(`${ENV_MAX_INFLIGHT_BYTES}=${goQuote(v)}: want a positive integer`);
  return Number(v);
}

// readEnv reads and checks the environment a host sets before anything
// starts: a malformed value is a PluginError naming its variable.
function readEnv(env) {
  const e = {};
  e.versions = env[ENV_PROTOCOL_VERSIONS] !== undefined ? parseVersions(env[ENV_PROTOCOL_VERSIONS]) : [];
  e.minPort = portEnv(env, ENV_MIN_PORT);
  e.maxPort = portEnv(env, ENV_MAX_PORT);
  if (e.maxPort && e.minPort > e.maxPort) throw new PluginError(`${ENV_MIN_PORT}=${e.minPort} is above ${ENV_MAX_PORT}=${e.maxPort}; the port range is empty`);
  e.network = env[ENV_NETWORK] || '';
  if (!['', 'unix', 'tcp'].includes(e.network)) throw new PluginError(`${ENV_NETWORK}=${goQuote(e.network)}: want unix or tcp`);
  const group = env[ENV_UNIX_SOCKET_GROUP] || '';
  e.socketGid = !group ? null : /^[0-9]+$/.test(group) ? Number(group) : groupId(group);
  e.socketDir = env[ENV_UNIX_SOCKET_DIR] || '';
  e.maxInflight = inflightEnv(env);
  return e;
}

// parseVersions reads a comma list such as "5,6", as Go's
// handshake.ParseVersions.
function parseVersions(s) {
  const out = [];
  for (let part of s.split(',')) {
    part = part.trim();
    if (!part) continue;
    if (!/^\+?\d+$/.test(part)) {
      throw new PluginError(`${ENV_PROTOCOL_VERSIONS}: protocol version ${goQuote(part)} in ${goQuote(s)} is not a non-negative integer; write versions as a comma list such as 5,6`);
    }
    const v = parseInt(part, 10);
    if (!out.includes(v)) out.push(v);
  }
  return out.sort((a, b) => a - b);
}

// versionError is the text of Go's handshake.VersionError.
function versionError(plugin, host) {
  return `incompatible app protocol version: plugin supports ${formatVersions(plugin)}, host supports ${formatVersions(host)}; ` +
    `upgrade whichever side is older (or pick a plugin release that speaks one of ${formatVersions(host)})`;
}

// chooseVersion picks the highest version both speak. With none in common
// it logs the error a Go plugin logs and answers with its lowest version,
// so that the host fails at once with its own message.
function chooseVersion(mine, host, logger) {
  mine = [...mine].sort((a, b) => a - b);
  if (host.length === 0) return mine[mine.length - 1];
  const common = mine.filter((v) => host.includes(v));
  if (common.length) return common[common.length - 1];
  logger.error('no app protocol version in common with the host', {
    plugin_versions: mine,
    host_versions: host,
    error: versionError(mine, host),
  });
  return mine[0];
}

// handshakeLine is CORE|APP|NETWORK|ADDRESS|grpc|CERT, the certificate in
// unpadded standard base64.
function handshakeLine(app, network, address, der) {
  const cert = der ? der.toString('base64').replace(/=+$/, '') : '';
  return `${CORE_VERSION}|${app}|${network}|${address}|grpc|${cert}\n`;
}

// Lifecycle is what the services share: the stop request and the
// long-lived streams to end when the plugin stops.
class Lifecycle {
  constructor() {
    this.reason = null;
    this.ended = false;
    this.streams = new Set();
    this.onStop = null;
  }

  requestStop(reason) {
    if (this.reason !== null) return;
    this.reason = reason;
    if (this.onStop) setImmediate(this.onStop);
  }

  // stream registers a long-lived call: end runs when the plugin stops.
  stream(call, end) {
    const entry = { end };
    this.streams.add(entry);
    const forget = () => this.streams.delete(entry);
    call.on('cancelled', forget);
    call.on('close', forget);
    if (this.ended) end();
    return forget;
  }

  endStreams() {
    this.ended = true;
    for (const s of this.streams) s.end();
    this.streams.clear();
  }
}

function ownServices(life, stdio, served) {
  const healthStatus = () => (life.ended ? NOT_SERVING : SERVING);
  const known = (service) => service === '' || service === PLUGIN_HEALTH;
  const health = {
    Check(call, cb) {
      if (!known(call.request.service)) return cb(status(grpc.status.NOT_FOUND, 'unknown service'));
      cb(null, { status: healthStatus() });
    },
    List(call, cb) {
      cb(null, { statuses: { '': { status: healthStatus() }, [PLUGIN_HEALTH]: { status: healthStatus() } } });
    },
    Watch(call) {
      const ok = known(call.request.service);
      call.write({ status: ok ? healthStatus() : SERVICE_UNKNOWN });
      life.stream(call, () => {
        if (ok) call.write({ status: NOT_SERVING });
        call.end();
      });
    },
  };
  const controller = {
    Shutdown(call, cb) {
      cb(null, {});
      life.requestStop('the host asked');
    },
  };
  // The SDK brokers no connections: it holds the host's stream open, sends
  // nothing, and ends it when the plugin stops.
  const broker = {
    StartStream(call) {
      call.on('data', () => {});
      life.stream(call, () => call.end());
    },
  };
  const stdioService = {
    StreamStdio(call) {
      stdio.attach(call);
      life.stream(call, () => {
        stdio.detach(call);
        call.end();
      });
    },
  };
  const reflection = {
    ServerReflectionInfo(call) {
      call.on('data', (req) => call.write(reflect(req, served)));
      call.on('end', () => call.end());
    },
  };
  return {
    'grpc.health.v1.Health': health,
    'plugin.GRPCController': controller,
    'plugin.GRPCBroker': broker,
    'plugin.GRPCStdio': stdioService,
    'grpc.reflection.v1.ServerReflection': reflection,
    'grpc.reflection.v1alpha.ServerReflection': reflection,
  };
}

// reflect answers one server reflection request from the registry.
function reflect(req, served) {
  const resp = { valid_host: req.host, original_request: req };
  const notFound = (msg) => {
    resp.error_response = { error_code: grpc.status.NOT_FOUND, error_message: msg };
  };
  const files = (name) => {
    resp.file_descriptor_response = { file_descriptor_proto: REGISTRY.closure(name) };
  };
  switch (req.message_request) {
    case 'list_services':
      resp.list_services_response = { service: [...served].sort().map((name) => ({ name })) };
      break;
    case 'file_by_filename':
      if (REGISTRY.files.has(req.file_by_filename)) files(req.file_by_filename);
      else notFound('unknown file ' + req.file_by_filename);
      break;
    case 'file_containing_symbol': {
      const f = REGISTRY.symbols.get(req.file_containing_symbol);
      if (f) files(f);
      else notFound('unknown symbol ' + req.file_containing_symbol);
      break;
    }
    case 'all_extension_numbers_of_type':
      if (REGISTRY.symbols.has(req.all_extension_numbers_of_type)) {
        resp.all_extension_numbers_response = { base_type_name: req.all_extension_numbers_of_type, extension_number: [] };
      } else notFound('unknown type ' + req.all_extension_numbers_of_type);
      break;
    case 'file_containing_extension':
      notFound('no extensions are served');
      break;
    default:
      resp.error_response = { error_code: grpc.status.INVALID_ARGUMENT, error_message: 'empty reflection request' };
  }
  return resp;
}

// STDIO_CHUNK is the most output one GRPCStdio message carries.
const STDIO_CHUNK = 32 << 10;

// Stdio sends what the plugin writes to process.stdout and process.stderr
// after the handshake to the host over GRPCStdio.
class Stdio {
  constructor() {
    this.calls = new Set();
    this.pending = [];
  }

  // put sends data in pieces of STDIO_CHUNK bytes: the host takes stdio
  // messages of at most 64 KiB (the Go plugin sends 32 KiB pieces too).
  put(channel, data) {
    const buf = Buffer.from(data);
    for (let i = 0; i < buf.length; i += STDIO_CHUNK) this.send({ channel, data: buf.subarray(i, i + STDIO_CHUNK) });
  }

  send(msg) {
    if (this.calls.size === 0) {
      if (this.pending.length < 4096) this.pending.push(msg);
      return;
    }
    for (const c of this.calls) c.write(msg);
  }

  attach(call) {
    this.calls.add(call);
    for (const m of this.pending.splice(0)) call.write(m);
  }

  detach(call) {
    this.calls.delete(call);
  }

  capture() {
    for (const [stream, channel] of [[process.stdout, 1], [process.stderr, 2]]) {
      stream.write = (chunk, encoding, cb) => {
        this.put(channel, typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? encoding : 'utf8') : chunk);
        const done = typeof encoding === 'function' ? encoding : cb;
        if (done) setImmediate(done);
        return true;
      };
    }
  }
}

// Plugin is one run of a plugin: see serve.
class Plugin {
  constructor(catalog, cookie, { env = process.env, logger, stdoutFd = 1, keepStdio = false, parentWatch = true } = {}) {
    this.catalog = catalog;
    this.cookie = cookie;
    this.env = env;
    this.logger = logger || new Logger({ level: env.PLUGKIT_PLUGIN_LOG_LEVEL || 'info' });
    this.stdoutFd = stdoutFd;
    this.keepStdio = keepStdio;
    this.parentWatch = parentWatch;
    this.life = new Lifecycle();
    this.sockDir = null;
  }

  // run serves until the host asks the plugin to stop, SIGTERM, or the
  // host dies, and resolves to the exit status: 0 after a requested stop,
  // 1 after an error, which is written to standard error.
  async run() {
    const [key, value] = this.cookie;
    if (this.env[key] !== value) {
      fs.writeSync(2, cookieNotice(key) + '\n');
      return 1;
    }
    try {
      return await this.serve();
    } catch (e) {
      // One line, never a stack.
      fs.writeSync(2, `plugin: ${e instanceof PluginError ? e.message : goQuote(`${e.name}: ${e.message}`).slice(1, -1)}\n`);
      return 1;
    } finally {
      if (this.sockDir) fs.rmSync(this.sockDir, { recursive: true, force: true });
    }
  }

  async listen(server, creds, env) {
    const bind = (addr) => new Promise((resolve, reject) => server.bindAsync(addr, creds, (err, port) => (err ? reject(err) : resolve(port))));
    if (env.network === 'tcp') {
      const lo = env.minPort;
      const hi = env.maxPort;
      for (let p = hi ? lo : 0; p <= hi; p++) {
        try {
          return ['tcp', `127.0.0.1:${await bind(`127.0.0.1:${p}`)}`];
        } catch (e) {
          // taken: try the next port
        }
      }
      throw new PluginError(`no free TCP port in ${lo}-${hi} (${ENV_MIN_PORT}, ${ENV_MAX_PORT})`);
    }
    const parent = env.socketDir || os.tmpdir();
    try {
      this.sockDir = fs.mkdtempSync(path.join(parent, 'plugkit-'));
    } catch (e) {
      throw new PluginError(`creating the socket directory in ${goQuote(parent)} (${ENV_UNIX_SOCKET_DIR}): ${e.code || e.message}`);
    }
    const sock = path.join(this.sockDir, 'plugin.sock');
    if (sock.length > MAX_UNIX_PATH) {
      throw new PluginError(`unix socket path ${goQuote(sock)} is ${sock.length} bytes, over the ${MAX_UNIX_PATH}-byte limit of unix sockets; set PLUGIN_UNIX_SOCKET_DIR (or TMPDIR) to a shorter directory such as /tmp`);
    }
    await bind('unix:' + sock);
    const gid = env.socketGid;
    if (gid === null) {
      fs.chmodSync(sock, 0o600);
    } else {
      for (const p of [this.sockDir, sock]) {
        try {
          fs.chownSync(p, -1, gid);
        } catch (e) {
          throw new PluginError(`giving ${goQuote(p)} to group ${gid} (${ENV_UNIX_SOCKET_GROUP}): ${e.code} (the host must be root or a member of the group)`);
        }
      }
      fs.chmodSync(this.sockDir, 0o750);
      fs.chmodSync(sock, 0o660);
    }
    return ['unix', sock];
  }

  async serve() {
    const env = readEnv(this.env);
    const version = chooseVersion([PROTOCOL_VERSION], env.versions, this.logger);

    let creds = grpc.ServerCredentials.createInsecure();
    let identity = null;
    const clientCert = this.env[ENV_CLIENT_CERT] || '';
    if (clientCert) {
      if (!clientCert.includes('-----BEGIN CERTIFICATE-----')) throw new PluginError(`${ENV_CLIENT_CERT} is set but holds no PEM certificate`);
      identity = newIdentity();
      creds = grpc.ServerCredentials.createSsl(Buffer.from(clientCert), [{ private_key: identity.keyPem, cert_chain: identity.certPem }], true);
    }

    const budget = new Budget(env.maxInflight, MAX_MESSAGE_SIZE);
    const server = new grpc.Server({
      'grpc.max_receive_message_length': MAX_MESSAGE_SIZE,
      'grpc.max_send_message_length': MAX_MESSAGE_SIZE,
      interceptors: [budget.interceptor()],
    });
    const addService = server.addService.bind(server);
    server.addService = (def, impl) => addService(...budget.wrap(def, impl));
    const stdio = new Stdio();
    const served = [CATALOG_SERVICE, ...this.catalog.groups.map((g) => g.service)];
    const own = ownServices(this.life, stdio, served);
    served.push(...Object.keys(own));
    for (const [name, impl] of Object.entries(own)) server.addService(REGISTRY.service(name), impl);
    this.catalog.addTo(server);

    const [network, address] = await this.listen(server, creds, env);

    const stopped = new Promise((resolve) => {
      this.life.onStop = resolve;
    });
    process.on('SIGTERM', () => this.life.requestStop('SIGTERM'));
    process.on('SIGINT', () => {}); // the host decides when its plugins stop
    let watch = null;
    if (this.parentWatch) {
      const parent = PARENT_AT_START;
      const goneBefore = hostGoneBeforeStart(this.env, parent);
      const look = () => {
        if (goneBefore || process.ppid !== parent) this.life.requestStop('parent');
      };
      look();
      watch = setInterval(look, PARENT_POLL_MS);
    }

    // Straight to the file descriptor: nothing to flush.
    fs.writeSync(this.stdoutFd, handshakeLine(version, network, address, identity && identity.der));
    if (!this.keepStdio) stdio.capture();
    this.logger.debug('plugin serving', { network, address, version, tls: identity !== null });

    await stopped;
    if (watch) clearInterval(watch);
    const reason = this.life.reason;
    if (reason === 'parent') this.logger.warn('plugin stopping: its host process is gone');
    else this.logger.debug('plugin stopping', { reason });
    // The streams that live as long as the connection end first, so that
    // the graceful stop waits only for the host's own calls.
    this.life.endStreams();
    await new Promise((resolve) => {
      if (reason === 'parent') {
        server.forceShutdown();
        resolve();
        return;
      }
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, SHUTDOWN_GRACE_MS);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return 0;
  }
}

function groupId(name) {
  for (const line of fs.readFileSync('/etc/group', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name) return Number(f[2]);
  }
  throw new PluginError(`socket group ${goQuote(name)} (${ENV_UNIX_SOCKET_GROUP}): no such group`);
}

// serve serves catalog as a plugin and exits the process when done: status
// 0 after the host asked it to stop, 1 after an error (written to standard
// error). cookie is the kind's magic cookie, [KEY, VALUE]. A person who runs
// the program by hand gets the notice a Go plugin gives.
function serve(catalog, cookie, options) {
  new Plugin(catalog, cookie, options).run().then((code) => process.exit(code));
}

module.exports = { Plugin, PluginError, serve, cookieNotice, parseVersions, versionError, chooseVersion, handshakeLine, formatVersions, reflect, Stdio };
