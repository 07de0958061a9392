import { pino, type Logger as PinoLogger } from 'pino';

/** Structured logger. Child loggers carry `correlationId`, `conversationId` and friends. */
export type Logger = PinoLogger;

/**
 * Paths that can carry secrets anywhere in a log object. pino's redact needs explicit paths, so the common
 * shapes are listed; code must still never log a whole config or request.
 */
const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'bearerToken',
  '*.bearerToken',
  'password',
  '*.password',
];

export interface LoggerOptions {
  readonly level?: string;
  /** Where to write; defaults to stdout. Tests pass a stream to read logs back. */
  readonly destination?: NodeJS.WritableStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { app: 'palaver' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    options.destination ?? pino.destination({ sync: false }),
  );
}

/** A logger that drops everything; the default for embedded use without a logger. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
