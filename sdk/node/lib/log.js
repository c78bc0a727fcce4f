'use strict';
// Log records in hclog's JSON format on the process's standard error,
// which plugkit and go-plugin hosts turn into log records of their own.

const fs = require('fs');

const LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

// timestamp formats a time as hclog does (Go's
// 2006-01-02T15:04:05.000000Z07:00), in UTC; JavaScript has milliseconds.
function timestamp(d = new Date()) {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

class Logger {
  constructor({ level = 'info', fd = 2, fields = {} } = {}) {
    this.level = LEVELS[level] ?? LEVELS.info;
    this.fd = fd;
    this.fields = fields;
  }

  log(level, message, fields = {}) {
    if (LEVELS[level] < this.level) return;
    const record = { '@timestamp': timestamp(), '@level': level, '@message': message, ...this.fields, ...fields };
    try {
      fs.writeSync(this.fd, JSON.stringify(record) + '\n');
    } catch (e) {
      // The host is gone; nobody reads.
    }
  }

  trace(m, f) { this.log('trace', m, f); }
  debug(m, f) { this.log('debug', m, f); }
  info(m, f) { this.log('info', m, f); }
  warn(m, f) { this.log('warn', m, f); }
  error(m, f) { this.log('error', m, f); }
}

module.exports = { Logger, timestamp, LEVELS };
