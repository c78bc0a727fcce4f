"""Log records in hclog's JSON format on the process's standard error.

plugkit and go-plugin hosts read a plugin's standard error line by line and
turn each JSON object with "@level", "@message" and "@timestamp" into a log
record of their own.
"""

import datetime
import json
import os
import threading

LEVELS = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "error": 4}


def timestamp(now=None):
    """Formats a time as hclog does: microseconds and a zone, Z for UTC
    (Go's 2006-01-02T15:04:05.000000Z07:00)."""
    now = now or datetime.datetime.now().astimezone()
    s = now.isoformat(timespec="microseconds")
    return s[:-6] + "Z" if s.endswith("+00:00") else s


class Logger:
    """Writes hclog JSON lines to a file descriptor (2: the real standard
    error, which stays the host's even when sys.stderr is redirected).
    Records below level are dropped."""

    def __init__(self, level="info", fd=2, **fields):
        self.level = LEVELS.get(level, LEVELS["info"])
        self.fd = fd
        self.fields = fields
        self._lock = threading.Lock()

    def log(self, level, message, **fields):
        if LEVELS[level] < self.level:
            return
        record = {"@timestamp": timestamp(), "@level": level, "@message": message}
        record.update(self.fields)
        record.update(fields)
        line = json.dumps(record, default=str, separators=(",", ":")) + "\n"
        with self._lock:
            try:
                os.write(self.fd, line.encode())
            except OSError:
                pass

    def trace(self, message, **fields):
        self.log("trace", message, **fields)

    def debug(self, message, **fields):
        self.log("debug", message, **fields)

    def info(self, message, **fields):
        self.log("info", message, **fields)

    def warn(self, message, **fields):
        self.log("warn", message, **fields)

    def error(self, message, **fields):
        self.log("error", message, **fields)
