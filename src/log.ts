// Structured logs: one JSON line per event on stdout (pino).
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'downloads-catalogue' }, timestamp: pino.stdTimeFunctions.isoTime });
}
