// Structured JSON logs (pino: fast, one line per event). Secrets never reach a log call:
// requests are logged by route pattern, status and ids only.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
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
