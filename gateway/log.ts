// Structured JSON logs (pino: fast, one line per event). Secrets never reach a log call:
// requests are logged by route pattern, status and ids only.
import pino from 'pino';
import { activeTraceFields } from './telemetry/index.js';

export type Logger = pino.Logger;

export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  options: { trace_ids?: boolean } = {},
): Logger {
  return pino(
    {
      level,
      // With telemetry on, every line logged inside a span carries its trace_id and span_id.
      ...(options.trace_ids ? { mixin: activeTraceFields } : {}),
      base: { service: 'aihub-gateway' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: [
          'key',
          'token',
          'password',
          'authorization',
          '*.key',
          '*.token',
          '*.password',
          '*.authorization',
        ],
        censor: '[redacted]',
      },
    },
    // Asynchronous: lines written while a write is in flight go out together in the next one
    // (a synchronous write per line costs each request; docs/chat-api.md#benchmark); pino
    // flushes at exit.
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
