"""Serving a catalog as a plugin: the cookie, the version negotiation, the
socket, AutoMTLS, the handshake line, the services, and the stop (the host's
Shutdown, SIGTERM, or the host's death)."""

import base64
import grp
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading

import grpc

from . import _automtls
from ._budget import DEFAULT_MAX_INFLIGHT_BYTES, ENV_MAX_INFLIGHT_BYTES, READ_COPIES, Budget, BudgetHandler, GatedExecutor
from ._catalog import CATALOG_SERVICE, PROTOCOL_VERSION, _q, service_handler
from ._log import Logger
from ._services import (
    HEALTH_SERVICE,
    Broker,
    Controller,
    Health,
    Lifecycle,
    Reflection,
    Stdio,
    StdioWriter,
)

# The environment a host sets (handshake.Env* in Go).
ENV_PROTOCOL_VERSIONS = "PLUGIN_PROTOCOL_VERSIONS"
ENV_CLIENT_CERT = "PLUGIN_CLIENT_CERT"
ENV_UNIX_SOCKET_DIR = "PLUGIN_UNIX_SOCKET_DIR"
ENV_UNIX_SOCKET_GROUP = "PLUGIN_UNIX_SOCKET_GROUP"
ENV_NETWORK = "PLUGKIT_NETWORK"
ENV_MIN_PORT = "PLUGIN_MIN_PORT"
ENV_MAX_PORT = "PLUGIN_MAX_PORT"

CORE_VERSION = 1
MAX_UNIX_PATH = 103
MAX_MESSAGE_SIZE = 64 << 20
MAX_WORKERS = 32
SHUTDOWN_GRACE = 1.5  # seconds in-flight calls get after a stop request
PARENT_POLL = 0.1  # seconds between two looks at the parent process
ENV_HOST_PID = "PLUGKIT_HOST_PID"  # a plugkit host's pid, when it runs the plugin directly

# The parent this process had at its start (this module's import), which
# the watch compares with: a host may die at any step of the handshake,
# before serve even begins.
PARENT_AT_START = os.getppid()


def _host_gone_before_start(environ, parent):
    """Whether the host that named itself in PLUGKIT_HOST_PID is not the
    parent this process started with and no longer exists: it died before
    this process could record it."""
    try:
        pid = int(environ.get(ENV_HOST_PID, ""))
    except ValueError:
        return False
    if pid <= 0 or pid == parent:
        return False
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            pass
        return False
    i = stat.rfind(b")")
    return i >= 0 and stat[i + 2:i + 3] in (b"Z", b"X")


class PluginError(Exception):
    """A plugin that cannot start; the message says what to do."""


def cookie_notice(key):
    """The notice for a person who ran the plugin by hand, as Go's
    handshake.CookieError words it."""
    return (
        "this binary is a plugin: it is not meant to be run by hand. "
        "Its host program starts it when it needs it (the host sets %s). "
        "To look inside it, run: plugkit inspect PATH --cookie %s=VALUE" % (key, key)
    )


def port_env(env, key):
    """Reads a port variable as Go's handshake.ReadEnv does; unset or empty
    means 0 (any free port)."""
    v = env.get(key, "")
    if not v:
        return 0
    if not re.fullmatch(r"[+-]?[0-9]+", v, re.ASCII) or not 0 <= int(v) <= 65535:
        raise PluginError("%s=%s is not a port number (0-65535)" % (key, _q(v)))
    return int(v)


def socket_group(env):
    """The group id PLUGIN_UNIX_SOCKET_GROUP names (a name or a number), or
    None when it is unset."""
    group = env.get(ENV_UNIX_SOCKET_GROUP, "")
    if not group:
        return None
    if re.fullmatch(r"[0-9]+", group, re.ASCII):
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except (KeyError, UnicodeError, ValueError):
        raise PluginError("socket group %s (%s): no such group" % (_q(group), ENV_UNIX_SOCKET_GROUP)) from None


def inflight_env(env):
    """The in-flight budget, from PLUGKIT_MAX_INFLIGHT_BYTES as a Go plugin
    service reads it: 256 MiB unless set."""
    v = env.get(ENV_MAX_INFLIGHT_BYTES, "")
    if not v:
        return max(DEFAULT_MAX_INFLIGHT_BYTES, READ_COPIES * MAX_MESSAGE_SIZE)
    if not re.fullmatch(r"[+-]?[0-9]+", v, re.ASCII) or int(v) <= 0 or int(v) >= 1 << 63:
        raise PluginError("%s=%s: want a positive integer" % (ENV_MAX_INFLIGHT_BYTES, _q(v)))
    return int(v)


class Env:
    """The environment a host sets, read and checked before anything
    starts: a malformed value is a PluginError naming its variable."""

    def __init__(self, env):
        self.versions = []
        if ENV_PROTOCOL_VERSIONS in env:
            self.versions = parse_versions(env[ENV_PROTOCOL_VERSIONS])
        self.min_port = port_env(env, ENV_MIN_PORT)
        self.max_port = port_env(env, ENV_MAX_PORT)
        if self.min_port > self.max_port and self.max_port:
            raise PluginError(
                "%s=%d is above %s=%d; the port range is empty" % (ENV_MIN_PORT, self.min_port, ENV_MAX_PORT, self.max_port)
            )
        self.network = env.get(ENV_NETWORK, "")
        if self.network not in ("", "unix", "tcp"):
            raise PluginError("%s=%s: want unix or tcp" % (ENV_NETWORK, _q(self.network)))
        self.socket_dir = env.get(ENV_UNIX_SOCKET_DIR, "")
        self.socket_gid = socket_group(env)
        self.client_cert = env.get(ENV_CLIENT_CERT, "")
        self.max_inflight = inflight_env(env)


def format_versions(vs):
    """Writes versions as Go prints an []int: "[5 6]"."""
    return "[" + " ".join(str(v) for v in sorted(vs)) + "]"


def parse_versions(s):
    """Reads a comma list such as "5,6", as Go's handshake.ParseVersions."""
    out = []
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            v = int(part, 10)
        except ValueError:
            v = -1
        if v < 0 or not part.lstrip("+").isdigit():
            raise PluginError(
                "%s: protocol version %s in %s is not a non-negative integer; write versions as a comma list such as 5,6"
                % (ENV_PROTOCOL_VERSIONS, _q(part), _q(s))
            )
        if v not in out:
            out.append(v)
    return sorted(out)


def version_error(plugin, host):
    """The text of Go's handshake.VersionError."""
    return (
        "incompatible app protocol version: plugin supports %s, host supports %s; "
        "upgrade whichever side is older (or pick a plugin release that speaks one of %s)"
        % (format_versions(plugin), format_versions(host), format_versions(host))
    )


def choose_version(mine, host, logger):
    """Picks the highest version both speak. With none in common it logs
    the error a Go plugin logs and answers with its lowest version, so that
    the host fails at once with its own message."""
    mine = sorted(mine)
    if not host:
        return mine[-1]
    common = [v for v in mine if v in host]
    if common:
        return common[-1]
    logger.error(
        "no app protocol version in common with the host",
        plugin_versions=mine,
        host_versions=host,
        error=version_error(mine, host),
    )
    return mine[0]


def handshake_line(app_version, network, address, cert_der):
    """CORE|APP|NETWORK|ADDRESS|grpc|CERT, the certificate in unpadded
    standard base64."""
    cert = base64.b64encode(cert_der).decode().rstrip("=") if cert_der else ""
    return "%d|%d|%s|%s|grpc|%s\n" % (CORE_VERSION, app_version, network, address, cert)


class _LogHandler(logging.Handler):
    """Sends Python's logging (grpcio's tracebacks among it) to hclog."""

    def __init__(self, logger):
        super().__init__()
        self.logger = logger

    def emit(self, record):
        level = "error" if record.levelno >= logging.ERROR else "warn" if record.levelno >= logging.WARNING else "info"
        if record.levelno < logging.INFO:
            level = "debug"
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + logging.Formatter().formatException(record.exc_info)
        self.logger.log(level, msg, **{"@module": record.name})


class Plugin:
    """One run of a plugin: see serve."""

    def __init__(self, catalog, cookie, environ=None, logger=None, stdout_fd=1, keep_stdio=False, parent_watch=True):
        self.catalog = catalog
        self.cookie = cookie
        self.env = os.environ if environ is None else environ
        self.logger = logger or Logger(level=self.env.get("PLUGKIT_PLUGIN_LOG_LEVEL", "info"))
        self.stdout_fd = stdout_fd
        self.keep_stdio = keep_stdio
        self.parent_watch = parent_watch
        self.life = Lifecycle()
        self.server = None
        self.sock_dir = None

    def _listen(self, server, creds, env):
        """Opens the socket: a unix socket in a private directory inside
        PLUGIN_UNIX_SOCKET_DIR, or loopback TCP when PLUGKIT_NETWORK=tcp.
        Returns (network, address)."""

        def add(addr):
            try:
                port = server.add_secure_port(addr, creds) if creds else server.add_insecure_port(addr)
            except RuntimeError:
                port = 0
            return port

        if env.network == "tcp":
            lo, hi = env.min_port, env.max_port
            for port in range(lo, hi + 1) if hi else [0]:
                got = add("127.0.0.1:%d" % port)
                if got:
                    return "tcp", "127.0.0.1:%d" % got
            raise PluginError("no free TCP port in %s-%s (%s, %s)" % (lo, hi, ENV_MIN_PORT, ENV_MAX_PORT))
        parent = env.socket_dir or tempfile.gettempdir()
        try:
            self.sock_dir = tempfile.mkdtemp(prefix="plugkit-", dir=parent)
        except OSError as e:
            raise PluginError(
                "creating the socket directory in %s (%s): %s" % (_q(parent), ENV_UNIX_SOCKET_DIR, e.strerror)
            ) from None
        path = os.path.join(self.sock_dir, "plugin.sock")
        if len(path) > MAX_UNIX_PATH:
            raise PluginError(
                "unix socket path %s is %d bytes, over the %d-byte limit of unix sockets; "
                "set PLUGIN_UNIX_SOCKET_DIR (or TMPDIR) to a shorter directory such as /tmp"
                % (_q(path), len(path), MAX_UNIX_PATH)
            )
        if not add("unix:" + path):
            raise PluginError("listening on %s failed" % _q(path))
        return "unix", path

    def _secure_socket(self, path, gid):
        if gid is None:
            os.chmod(path, 0o600)
            return
        for p in (self.sock_dir, path):
            try:
                os.chown(p, -1, gid)
            except OSError as e:
                raise PluginError(
                    "giving %s to group %d (%s): %s (the host must be root or a member of the group)"
                    % (_q(p), gid, ENV_UNIX_SOCKET_GROUP, e.strerror)
                ) from None
        os.chmod(self.sock_dir, 0o750)
        os.chmod(path, 0o660)

    def run(self):
        """Serves until the host asks the plugin to stop, SIGTERM, or the
        host dies. Returns the exit status: 0 after a requested stop, 1
        after an error, which is written to standard error."""
        key, value = self.cookie
        if self.env.get(key) != value:
            os.write(2, (cookie_notice(key) + "\n").encode())
            return 1
        try:
            return self._serve()
        except PluginError as e:
            os.write(2, ("plugin: %s\n" % e).encode("utf-8", "backslashreplace"))
            return 1
        except Exception as e:  # one line, never a traceback
            os.write(2, ("plugin: %s\n" % _q("%s: %s" % (type(e).__name__, e))[1:-1]).encode("utf-8", "backslashreplace"))
            return 1
        finally:
            if self.sock_dir:
                shutil.rmtree(self.sock_dir, ignore_errors=True)

    def _serve(self):
        env = Env(self.env)
        version = choose_version([PROTOCOL_VERSION], env.versions, self.logger)

        creds, identity = None, None
        client_cert = env.client_cert
        if client_cert:
            if "-----BEGIN CERTIFICATE-----" not in client_cert:
                raise PluginError("%s is set but holds no PEM certificate" % ENV_CLIENT_CERT)
            identity = _automtls.new_identity()
            creds = grpc.ssl_server_credentials(
                [(identity.key_pem, identity.cert_pem)],
                root_certificates=client_cert.encode("utf-8", "surrogateescape"),
                require_client_auth=True,
            )

        logging.getLogger().addHandler(_LogHandler(self.logger))
        budget = Budget(env.max_inflight, MAX_MESSAGE_SIZE)
        server = grpc.server(
            GatedExecutor(budget, max_workers=MAX_WORKERS, thread_name_prefix="plugkit"),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE_SIZE),
                ("grpc.max_send_message_length", MAX_MESSAGE_SIZE),
                ("grpc.so_reuseport", 0),
                # A call waiting for its turn (GatedExecutor) holds no more than
                # the initial stream window: no windows grown by BDP probes.
                ("grpc.http2.bdp_probe", 0),
            ],
        )
        self.server = server
        stdio = Stdio(self.life)
        own = {
            HEALTH_SERVICE: Health(self.life),
            "plugin.GRPCController": Controller(self.life),
            "plugin.GRPCBroker": Broker(self.life),
            "plugin.GRPCStdio": stdio,
        }
        handlers = [service_handler(name, impl) for name, impl in own.items()]
        handlers += self.catalog.handlers()
        served = list(own) + [CATALOG_SERVICE] + [g.service for g in self.catalog.groups]
        for pkg in ("grpc.reflection.v1", "grpc.reflection.v1alpha"):
            served.append(pkg + ".ServerReflection")
        for pkg in ("grpc.reflection.v1", "grpc.reflection.v1alpha"):
            handlers.append(service_handler(pkg + ".ServerReflection", Reflection(pkg, served)))
        server.add_generic_rpc_handlers(tuple(BudgetHandler(h, budget) for h in handlers))

        network, address = self._listen(server, creds, env)
        server.start()
        if network == "unix":
            self._secure_socket(address, env.socket_gid)

        signal.signal(signal.SIGTERM, lambda *_: self.life.request_stop("SIGTERM"))
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host decides when its plugins stop
        if self.parent_watch:
            self._watch_parent()

        # The line goes straight to the file descriptor: nothing to flush.
        sys.stdout.flush()
        line = handshake_line(version, network, address, identity.der if identity else None)
        os.write(self.stdout_fd, line.encode())
        if not self.keep_stdio:
            sys.stdout = StdioWriter(stdio, Stdio.STDOUT)
            sys.stderr = StdioWriter(stdio, Stdio.STDERR)
        self.logger.debug("plugin serving", network=network, address=address, version=version, tls=creds is not None)

        while not self.life.stop.wait(1.0):
            pass
        reason = self.life.reason
        if reason == "parent":
            self.logger.warn("plugin stopping: its host process is gone")
        else:
            self.logger.debug("plugin stopping", reason=reason)
        # The streams that live as long as the connection end first, so
        # that the graceful stop waits only for the host's own calls.
        self.life.end_streams()
        grace = 0 if reason == "parent" else SHUTDOWN_GRACE
        server.stop(grace).wait(grace + 1)
        if not self.keep_stdio:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        return 0

    def _watch_parent(self):
        parent = PARENT_AT_START
        gone_before = _host_gone_before_start(self.env, parent)

        def watch():
            while True:
                if gone_before or os.getppid() != parent:
                    self.life.request_stop("parent")
                    return
                if self.life.stop.wait(PARENT_POLL):
                    return

        threading.Thread(target=watch, name="plugkit-parent-watch", daemon=True).start()


def serve(catalog, cookie, **options):
    """Serves catalog as a plugin and exits the process when done: status 0
    after the host asked it to stop, 1 after an error (written to standard
    error). cookie is the kind's magic cookie, (KEY, VALUE). A person who
    runs the program by hand gets the notice a Go plugin gives."""
    code = Plugin(catalog, cookie, **options).run()
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    # grpcio's threads may still hold a finished stream: exit without
    # waiting for them.
    os._exit(code)
