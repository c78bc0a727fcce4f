'use strict';
// The Node SDK's own tests: the certificate, the Go texts, the catalog, reflection,
// and a served plugin over AutoMTLS.

const test = require('node:test');
const assert = require('node:assert');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const readline = require('readline');
const grpc = require('@grpc/grpc-js');

const plugkit = require('../lib');
const { newIdentity } = require('../lib/automtls');
const serve = require('../lib/serve');
const { REGISTRY } = require('../lib/proto');
const { timestamp, Logger } = require('../lib/log');
const files = require('../examples/objectstore_descriptors');
const { StoreV1, StoreV2 } = require('../examples/objectstore_memory');

plugkit.addFiles(files);
const V1 = 'objectstore.v1.ObjectStore';
const V2 = 'objectstore.v2.ObjectStore';

test('the certificate is self-signed, a CA, for localhost, P-256, valid ten years', () => {
  const now = new Date(Date.UTC(2030, 4, 6, 7, 8, 9));
  const id = newIdentity(now);
  const cert = new crypto.X509Certificate(id.certPem);
  assert.ok(cert.verify(cert.publicKey), 'the signature verifies with its own key');
  assert.ok(cert.ca);
  assert.strictEqual(cert.checkHost('localhost'), 'localhost');
  assert.strictEqual(cert.subject, 'O=plugkit\nCN=localhost');
  assert.strictEqual(cert.issuer, cert.subject);
  assert.strictEqual(cert.publicKey.asymmetricKeyDetails.namedCurve, 'prime256v1');
  assert.deepStrictEqual([...cert.keyUsage].sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  assert.strictEqual(new Date(cert.validFrom).getTime(), now.getTime() - 30000);
  assert.strictEqual(new Date(cert.validTo).getTime(), now.getTime() + 10 * 365 * 24 * 3600 * 1000);
  assert.ok(cert.raw.equals(id.der));
  const key = crypto.createPrivateKey(id.keyPem);
  assert.ok(cert.checkPrivateKey(key), 'the key matches the certificate');
  assert.notDeepStrictEqual(newIdentity().der, id.der);
});

test('versions, the version error and the cookie notice are Go\'s texts', () => {
  assert.deepStrictEqual(serve.parseVersions(' 6, 5,,5 '), [5, 6]);
  assert.throws(() => serve.parseVersions('1,x'), {
    message: 'PLUGIN_PROTOCOL_VERSIONS: protocol version "x" in "1,x" is not a non-negative integer; write versions as a comma list such as 5,6',
  });
  const records = [];
  const logger = { error: (m, f) => records.push([m, f]) };
  assert.strictEqual(serve.chooseVersion([1, 2, 3], [2, 3, 4], logger), 3);
  assert.strictEqual(serve.chooseVersion([2, 1], [5, 7], logger), 1);
  assert.deepStrictEqual(records, [['no app protocol version in common with the host', {
    plugin_versions: [1, 2],
    host_versions: [5, 7],
    error: 'incompatible app protocol version: plugin supports [1 2], host supports [5 7]; upgrade whichever side is older (or pick a plugin release that speaks one of [5 7])',
  }]]);
  assert.strictEqual(serve.cookieNotice('K'), 'this binary is a plugin: it is not meant to be run by hand. Its host program starts it when it needs it (the host sets K). To look inside it, run: plugkit inspect PATH --cookie K=VALUE');
  assert.strictEqual(serve.handshakeLine(1, 'unix', '/s', Buffer.from([0x30, 0x82, 0x01, 0x00])), '1|1|unix|/s|grpc|MIIBAA\n');
});

test('log records are hclog JSON with Go\'s timestamp format', () => {
  assert.strictEqual(timestamp(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 60))), '2026-01-02T03:04:05.060000Z');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'log-'));
  const fd = fs.openSync(path.join(tmp, 'l'), 'w');
  new Logger({ level: 'debug', fd }).warn('disk full', { path: '/x' });
  new Logger({ level: 'info', fd }).debug('dropped');
  fs.closeSync(fd);
  const lines = fs.readFileSync(path.join(tmp, 'l'), 'utf8').trim().split('\n');
  assert.strictEqual(lines.length, 1);
  const rec = JSON.parse(lines[0]);
  assert.deepStrictEqual(Object.keys(rec).slice(0, 3), ['@timestamp', '@level', '@message']);
  assert.deepStrictEqual([rec['@level'], rec['@message'], rec.path], ['warn', 'disk full', '/x']);
  fs.rmSync(tmp, { recursive: true });
});

const meta = (name) => {
  const m = new grpc.Metadata();
  if (name) m.set(plugkit.NAME_KEY, name);
  return m;
};
const impl = (o) => new plugkit.Implementation(o);

test('Describe: lowest minor, common capabilities, majors highest first', () => {
  const c = new plugkit.Catalog('9.9.9', [
    impl({ kind: 'objectstore', major: 1, minor: 0, name: 'b/v1', service: V1, server: new StoreV1() }),
    impl({ kind: 'objectstore', major: 2, minor: 1, name: 'z/two', service: V2, server: new StoreV2(), capabilities: ['presign', 'zeta', 'zeta'] }),
    impl({ kind: 'objectstore', major: 2, minor: 3, name: 'a/two', service: V2, server: new StoreV2(), capabilities: ['zeta', 'presign', 'x'] }),
  ]);
  assert.deepStrictEqual(c.describe(), {
    plugin_version: '9.9.9', sdk_version: plugkit.SDK_VERSION, kinds: [{ name: 'objectstore', majors: [
      { major: 2, minor: 1, service: V2, capabilities: ['presign', 'zeta'], names: ['a/two', 'z/two'] },
      { major: 1, minor: 0, service: V1, capabilities: [], names: ['b/v1'] },
    ] }],
  });
});

test('routing by the plugkit-name metadata, with Go\'s errors', () => {
  const a = new StoreV1();
  const b = new StoreV1();
  const g = new plugkit.Catalog('1', [
    impl({ kind: 'objectstore', major: 1, name: 'ex/a', service: V1, server: a }),
    impl({ kind: 'objectstore', major: 1, name: 'ex/b', service: V1, server: b }),
  ]).groups[0];
  assert.strictEqual(g.pick(meta('ex/b')), b);
  assert.throws(() => g.pick(meta('ex/c')), { code: grpc.status.NOT_FOUND, message: V1 + ': no implementation named "ex/c" here; this plugin serves ex/a, ex/b' });
  assert.throws(() => g.pick(meta()), { code: grpc.status.INVALID_ARGUMENT, message: V1 + ': this plugin serves several implementations (ex/a, ex/b); name one in the "plugkit-name" metadata' });
  const only = new StoreV1();
  assert.strictEqual(new plugkit.Catalog('1', [impl({ kind: 'objectstore', major: 1, name: 'o', service: V1, server: only })]).groups[0].pick(meta()), only);
});

test('the catalog refuses mistakes, saying what to fix', () => {
  const bad = (want, ...impls) => assert.throws(() => new plugkit.Catalog('1', impls), (e) => e.message.includes(want));
  bad('no implementations');
  bad('kind must be a non-empty word', impl({ kind: 'object store', major: 1, name: 'n', service: V1, server: new StoreV1() }));
  bad('name is empty', impl({ kind: 'objectstore', major: 1, name: '', service: V1, server: new StoreV1() }));
  bad('versions must not be negative', impl({ kind: 'objectstore', major: 1, minor: -1, name: 'n', service: V1, server: new StoreV1() }));
  bad('is not in the descriptors given', impl({ kind: 'objectstore', major: 1, name: 'n', service: 'no.v1.Nope', server: new StoreV1() }));
  bad('StoreV1 does not implement objectstore.v2.ObjectStore: it lacks Stat, Copy, Presign', impl({ kind: 'objectstore', major: 2, name: 'n', service: V2, server: new StoreV1() }));
  bad('declared twice', impl({ kind: 'objectstore', major: 1, name: 'a', service: V1, server: new StoreV1() }), impl({ kind: 'objectstore', major: 1, name: 'a', service: V1, server: new StoreV1() }));
});

test('reflection answers from the descriptors', () => {
  const names = (resp) => resp.file_descriptor_response.file_descriptor_proto.map((b) => b.subarray(2, 2 + b[1]).toString());
  assert.deepStrictEqual(serve.reflect({ host: 'h', message_request: 'list_services' }, [V2, 'grpc.health.v1.Health']).list_services_response,
    { service: [{ name: 'grpc.health.v1.Health' }, { name: V2 }] });
  for (const sym of [V2, V2 + '.Presign', 'objectstore.v2.PutRequest', 'objectstore.v2.InitRequest.ConfigEntry']) {
    assert.deepStrictEqual(names(serve.reflect({ message_request: 'file_containing_symbol', file_containing_symbol: sym }, [])), ['objectstore/v2/objectstore.proto']);
  }
  assert.deepStrictEqual(names(serve.reflect({ message_request: 'file_containing_symbol', file_containing_symbol: 'plugin.GRPCStdio' }, [])),
    ['plugkit/goplugin/stdio.proto', 'google/protobuf/empty.proto']);
  assert.deepStrictEqual(names(serve.reflect({ message_request: 'file_containing_symbol', file_containing_symbol: 'grpc.health.v1.HealthCheckResponse.ServingStatus' }, [])),
    ['grpc/health/v1/health.proto']);
  assert.strictEqual(serve.reflect({ message_request: 'file_containing_symbol', file_containing_symbol: 'no.Such' }, []).error_response.error_code, 5);
});

// start runs the v1 example as a host would and returns the process and
// the handshake line's fields.
async function start(t, env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const proc = spawn(process.execPath, [path.join(__dirname, '..', 'examples', 'objectstore_v1.js')], {
    env: { ...process.env, PLUGKIT_EXAMPLE_PLUGIN: 'objectstore', PLUGIN_PROTOCOL_VERSIONS: '1', PLUGIN_UNIX_SOCKET_DIR: dir, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => proc.kill('SIGKILL'));
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  const line = await new Promise((resolve) => readline.createInterface({ input: proc.stdout }).once('line', resolve));
  return { dir, exited, proc, f: line.split('|') };
}

function client(service, address, creds) {
  const Ctor = grpc.makeGenericClientConstructor(REGISTRY.service(service), service);
  return new Ctor('unix:' + address, creds);
}
const call = (c, method, req) => new Promise((resolve, reject) => c[method](req, { deadline: Date.now() + 10000 }, (err, resp) => (err ? reject(err) : resolve(resp))));

test('a served plugin: AutoMTLS requiring a client certificate, health, Describe, a call, Shutdown', async (t) => {
  const host = newIdentity();
  const { dir, exited, f } = await start(t, { PLUGIN_CLIENT_CERT: host.certPem.toString() });
  assert.deepStrictEqual([f[0], f[1], f[2], f[4]], ['1', '1', 'unix', 'grpc']);
  const sock = f[3];
  assert.strictEqual(path.dirname(path.dirname(sock)), dir);
  assert.strictEqual(fs.statSync(sock).mode & 0o777, 0o600);
  assert.strictEqual(fs.statSync(path.dirname(sock)).mode & 0o777, 0o700);
  const der = Buffer.from(f[5], 'base64');
  const pluginPem = Buffer.from(`-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`);

  const anon = client('grpc.health.v1.Health', sock, grpc.credentials.createSsl(pluginPem));
  await assert.rejects(call(anon, 'Check', { service: 'plugin' }));
  anon.close();

  const creds = grpc.credentials.createSsl(pluginPem, host.keyPem, host.certPem);
  const health = client('grpc.health.v1.Health', sock, creds);
  assert.strictEqual((await call(health, 'Check', { service: 'plugin' })).status, 1); // SERVING
  const cat = client('plugkit.catalog.v1.Catalog', sock, creds);
  assert.deepStrictEqual((await call(cat, 'Describe', {})).kinds[0].majors[0].names, ['example.com/nodememory']);
  const store = client(V1, sock, creds);
  assert.strictEqual((await call(store, 'Exists', { key: 'k' })).exists, false);
  const ctl = client('plugin.GRPCController', sock, creds);
  await call(ctl, 'Shutdown', {});
  for (const c of [health, cat, store, ctl]) c.close();
  assert.strictEqual(await exited, 0);
  assert.deepStrictEqual(fs.readdirSync(dir), []);
});

test('plain text without PLUGIN_CLIENT_CERT, and SIGTERM stops it', async (t) => {
  const { dir, exited, f, proc } = await start(t, {});
  assert.strictEqual(f[5], '');
  const cat = client('plugkit.catalog.v1.Catalog', f[3], grpc.credentials.createInsecure());
  assert.strictEqual((await call(cat, 'Describe', {})).plugin_version, '1.0.0');
  cat.close();
  proc.kill('SIGTERM');
  assert.strictEqual(await exited, 0);
  assert.deepStrictEqual(fs.readdirSync(dir), []);
});

test('the in-flight budget refuses a request that does not fit with RESOURCE_EXHAUSTED', async (t) => {
  const { f, proc, exited } = await start(t, { PLUGKIT_MAX_INFLIGHT_BYTES: String(3 << 20) });
  const c = new grpc.Client('unix:' + f[3], grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 8 << 20 });
  // A DescribeRequest with an unknown field 15 of n bytes.
  const junk = (n) => {
    const len = [];
    for (let v = n; ; v >>>= 7) {
      if (v < 0x80) {
        len.push(v);
        break;
      }
      len.push((v & 0x7f) | 0x80);
    }
    return Buffer.concat([Buffer.from([0x7a, ...len]), Buffer.alloc(n)]);
  };
  const describe = (n) => new Promise((resolve, reject) => c.makeUnaryRequest('/plugkit.catalog.v1.Catalog/Describe', (b) => b, (b) => b, junk(n), { deadline: Date.now() + 30000 }, (err, resp) => (err ? reject(err) : resolve(resp))));
  await describe(512 << 10);
  await assert.rejects(describe(2 << 20), (err) => {
    assert.strictEqual(err.code, grpc.status.RESOURCE_EXHAUSTED, err.details);
    assert.match(err.details, /PLUGKIT_MAX_INFLIGHT_BYTES/);
    return true;
  });
  await describe(512 << 10); // the refused request's room is back
  c.close();
  proc.kill('SIGTERM');
  assert.strictEqual(await exited, 0);
});

test('a malformed environment stops the plugin with one line naming the variable', () => {
  const { spawnSync } = require('child_process');
  const cases = [
    ['PLUGIN_MIN_PORT', 'abc', 'PLUGIN_MIN_PORT="abc" is not a port number (0-65535)'],
    ['PLUGIN_MAX_PORT', '70000', 'PLUGIN_MAX_PORT="70000" is not a port number (0-65535)'],
    ['PLUGIN_MIN_PORT', '\x1b[2J', 'PLUGIN_MIN_PORT="\\x1b[2J" is not a port number (0-65535)'],
    ['PLUGIN_UNIX_SOCKET_GROUP', 'no-such-group-plugkit', 'socket group "no-such-group-plugkit" (PLUGIN_UNIX_SOCKET_GROUP): no such group'],
    ['PLUGKIT_MAX_INFLIGHT_BYTES', 'lots', 'PLUGKIT_MAX_INFLIGHT_BYTES="lots": want a positive integer'],
    ['PLUGIN_UNIX_SOCKET_DIR', '/nonexistent/\x07', '"/nonexistent/\\a" (PLUGIN_UNIX_SOCKET_DIR)'],
  ];
  for (const [key, value, want] of cases) {
    const p = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'objectstore_v1.js')], {
      env: { ...process.env, PLUGKIT_EXAMPLE_PLUGIN: 'objectstore', PLUGIN_PROTOCOL_VERSIONS: '1', [key]: value },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30000,
    });
    const stderr = p.stderr.toString();
    assert.strictEqual(p.status, 1, `${key}: ${stderr}`);
    assert.strictEqual(p.stdout.length, 0, key);
    const lines = stderr.split('\n').filter((l) => l);
    assert.strictEqual(lines.length, 1, stderr);
    assert.ok(lines[0].includes(want), `${key}: ${lines[0]}`);
    assert.doesNotMatch(lines[0], /[\x00-\x1f\x7f]/);
  }
});

test('stdio writes over the host\'s 64 KiB message limit go in 32 KiB pieces, in order', () => {
  const stdio = new serve.Stdio();
  const data = Buffer.alloc(100 << 10);
  for (let i = 0; i < data.length; i++) data[i] = i % 251;
  stdio.put(2, data);
  assert.strictEqual(stdio.pending.length, 4);
  assert.ok(stdio.pending.every((m) => m.data.length <= 32 << 10 && m.channel === 2));
  assert.ok(Buffer.concat(stdio.pending.map((m) => m.data)).equals(data));
});

test('descriptorSet reads a FileDescriptorSet, each file after its imports, and says what a set lacks', () => {
  const { FileDescriptorProto } = require('protobufjs/ext/descriptor');
  // A two-file kind: meter.proto imports types.proto and the SDK's own
  // google/protobuf/empty.proto; the set lists the importer first.
  const types = FileDescriptorProto.encode({ name: 'meter/v1/types.proto', package: 'meter.v1', syntax: 'proto3',
    messageType: [{ name: 'Reading', field: [{ name: 'watts', number: 1, type: 3, label: 1, jsonName: 'watts' }] }] }).finish();
  const meter = FileDescriptorProto.encode({ name: 'meter/v1/meter.proto', package: 'meter.v1', syntax: 'proto3',
    dependency: ['meter/v1/types.proto', 'google/protobuf/empty.proto'],
    service: [{ name: 'Meter', method: [{ name: 'Read', inputType: '.google.protobuf.Empty', outputType: '.meter.v1.Reading' }] }] }).finish();
  const field1 = (b) => Buffer.concat([Buffer.from([0x0a]), varint(b.length), Buffer.from(b)]);
  const set = Buffer.concat([field1(meter), field1(types)]);
  // Before the Catalog below adds types.proto to the SDK's pool:
  assert.throws(() => plugkit.descriptorSet(field1(meter)), /meter\/v1\/meter\.proto imports meter\/v1\/types\.proto, which the set lacks: build it with its imports/);
  assert.throws(() => plugkit.descriptorSet(Buffer.from([0x0a, 0xff])), /is not a FileDescriptorSet .*buf build -o/);
  assert.throws(() => plugkit.descriptorSet(Buffer.alloc(0)), /holds no files/);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plugkit-test-'));
  try {
    fs.writeFileSync(path.join(dir, 'image.binpb'), set);
    const files = plugkit.descriptorSet(path.join(dir, 'image.binpb'));
    assert.deepStrictEqual(files.map((f) => FileDescriptorProto.decode(f).name), ['meter/v1/types.proto', 'meter/v1/meter.proto']);
    assert.ok(files[1].equals(Buffer.from(meter)));
    assert.deepStrictEqual(plugkit.descriptorSet(set), files);
    assert.deepStrictEqual(plugkit.descriptorSet(require('url').pathToFileURL(path.join(dir, 'image.binpb'))), files);
    const c = new plugkit.Catalog('1.0.0', [new plugkit.Implementation({ kind: 'meter', major: 1, name: 'example.com/meter',
      service: 'meter.v1.Meter', server: { Read: (call, cb) => cb(null, { watts: 7 }) } })], files);
    assert.strictEqual(c.describe().kinds[0].majors[0].service, 'meter.v1.Meter');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

function varint(n) {
  const out = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}
