import { pino, type Logger as PinoLogger } from 'pino';
import { prettyDestination } from './pretty-lines.js';

/** Structured logger. Child loggers carry `correlationId`, `conversationId` and friends. */
export type Logger = PinoLogger;

/** What a secret, a token in a URL or a bearer credential is replaced with. */
export const REDACTED = '[redacted]';

/**
 * Secrets shorter than this are not scrubbed by value: a 4-character key would eat ordinary words and ids in every
 * line. They are still censored where they sit in a known field (the paths below). The config asks for at least 8
 * characters where Palaver picks the rule (`server.apiKey`); real provider keys and tokens are far longer.
 */
export const MIN_SECRET_LENGTH = 8;

/**
 * Fields that can carry secrets anywhere in a log object, censored by pino's `redact` (applied after the
 * serializers, so `err.*` paths see the serialized error). pino needs explicit paths, so the common shapes are
 * listed: credentials by name, header maps, and the request/config objects HTTP clients hang on their errors
 * (axios `err.config`, Node's `err.request`, SDK `err.headers`). Values the paths miss — a key echoed in an error
 * message, a cause's stack, a response body, a URL — are caught by the scrubber in {@link createSecretScrubber}.
 * Code must still never log a whole config or request.
 *
 * Paths that start with a wildcard (`*.apiKey`) make pino copy every logged object: each one costs every log call,
 * whatever it logs (the eight original ones below take a line from ~1.5 µs to ~8 µs). New paths are therefore rooted
 * (`err.config`, `headers.cookie`): they cost only when that key is logged.
 */
export const REDACT_PATHS: readonly string[] = [
  // Credentials by field name (the wildcard paths predate the value scrubber).
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
  'secret',
  'cookieSecret',
  'jwtSecret',
  'botToken',
  // Header maps, in the spellings Node (lower case) and fetch/axios callers (as written) use.
  'headers.Authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  'headers["x-api-key"]',
  'headers["x-palaver-user-token"]',
  'headers["x-palaver-visitor"]',
  'headers["x-telegram-bot-api-secret-token"]',
  'headers["proxy-authorization"]',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  // What HTTP clients attach to their errors: the request that was sent (with its headers) and the client config.
  'err.headers',
  'err.request',
  'err.config',
  'err.options',
  'err.response.headers',
  'err.response.config',
  'err.response.request',
  'error.headers',
  'error.request',
  'error.config',
  'error.options',
];

/** Query parameters whose value is a credential; `?token=…` becomes `?token=[redacted]` in every line. */
const SENSITIVE_QUERY_PARAMETERS = [
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'auth',
  'key',
  'api_key',
  'api-key',
  'apikey',
  'secret',
  'client_secret',
  'password',
  'passwd',
  'sig',
  'signature',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
];

/** Secrets from shortest to longest, with the forms they take inside a JSON log line or a URL. */
function secretForms(secrets: Iterable<string | undefined | null>): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue;
    const once = JSON.stringify(secret).slice(1, -1); // as it appears in a JSON string
    const twice = JSON.stringify(once).slice(1, -1); // inside a JSON body quoted in a message
    for (const form of [secret, once, twice, encodeURIComponent(secret)]) forms.add(form);
  }
  // Longest first, so a secret that contains another is censored whole.
  return [...forms].sort((a, b) => b.length - a.length);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** `key` → `[kK][eE][yY]`: case-insensitive for the names without making the secrets case-insensitive too. */
function anyCase(name: string): string {
  return [...name].map((char) => (char.toLowerCase() === char.toUpperCase() ? escapeRegExp(char) : `[${char.toLowerCase()}${char.toUpperCase()}]`)).join('');
}

const QUERY_PATTERN = `([?&](?:${SENSITIVE_QUERY_PARAMETERS.map(anyCase).join('|')})=)[^&#\\s"'\\\\<>]+`;
/** A bearer credential in free text (`Authorization: Bearer eyJ…`), including tokens Palaver does not know. */
const BEARER_PATTERN = `(${anyCase('bearer')}\\s+)[A-Za-z0-9._~+/-]{16,}=*`;
/** An operator's token (`pvo_` and 43 base64url characters) wherever it turns up: none is in the config to name. */
const OPERATOR_TOKEN_PATTERN = 'pvo_[A-Za-z0-9_-]{43}';

/**
 * A function that censors, in one pass of one precompiled regular expression, every occurrence of the given
 * secrets (those of at least {@link MIN_SECRET_LENGTH} characters, also in their JSON-escaped and URL-encoded
 * forms), the values of credential query parameters (`?token=…`, `&api_key=…`), bearer credentials in free text and
 * operator tokens (`pvo_…`).
 * A text with nothing to censor comes back as the same string.
 */
export function createSecretScrubber(secrets: Iterable<string | undefined | null> = []): (text: string) => string {
  const compile = () => new RegExp([QUERY_PATTERN, BEARER_PATTERN, OPERATOR_TOKEN_PATTERN, ...secretForms(secrets).map(escapeRegExp)].join('|'), 'g');
  let pattern = compile();
  // A Set is read live: a secret that turns up after start (a generated cookie secret) is censored from then on.
  const live = secrets instanceof Set ? secrets : undefined;
  let known = live?.size;
  const censor = (_match: string, query: string | undefined, bearer: string | undefined): string => (query ?? bearer ?? '') + REDACTED;
  return (text) => {
    if (live && live.size !== known) {
      known = live.size;
      pattern = compile();
    }
    return text.replace(pattern, censor);
  };
}

export interface LoggerOptions {
  readonly level?: string;
  /** Where to write; defaults to stdout. Tests pass a stream to read logs back. */
  readonly destination?: NodeJS.WritableStream;
  /**
   * Secret values to censor wherever they occur in a line (messages, error causes and stacks, response bodies,
   * URLs): model and fallback API keys, the server API key, MCP bearer tokens, … — see `secretsOf(config)`.
   * Values shorter than {@link MIN_SECRET_LENGTH} are ignored. A `Set` is read live: secrets added to it later are
   * censored from then on.
   */
  readonly secrets?: Iterable<string | undefined | null>;
  /**
   * `json`: one JSON object a line (for log collectors). `pretty`: a line a person reads (`12:04:05 WARN  message
   * key=value`). `auto` (default): pretty when the destination is a terminal, JSON otherwise.
   */
  readonly format?: 'auto' | 'json' | 'pretty';
}

/** Where a logger writes (stdout by default), as JSON or as lines a person reads. */
function destinationFor(options: LoggerOptions): pino.DestinationStream {
  const out = options.destination ?? process.stdout;
  const format = options.format ?? 'auto';
  if (format === 'pretty' || (format === 'auto' && (out as { isTTY?: boolean }).isTTY === true)) return prettyDestination(out);
  return options.destination ?? pino.destination({ sync: false });
}

/**
 * A pino logger whose every line, of it and of its children, passes through one redaction step: pino's `redact`
 * for known fields ({@link REDACT_PATHS}), then the secret scrubber on the finished line (pino's `streamWrite`
 * hook), which is the only place that sees everything the serializers produced.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: { app: 'palaver' },
      redact: { paths: [...REDACT_PATHS], censor: REDACTED },
      hooks: { streamWrite: createSecretScrubber(options.secrets) },
    },
    destinationFor(options),
  );
}

type Hooks = { streamWrite?: (line: string) => string } & Record<string, unknown>;
type WithSymbols = Record<symbol, unknown>;

/**
 * A child of `logger` (no extra bindings) whose lines, and those of its own children, also pass the secret scrubber
 * — for a logger handed to Palaver from outside. The scrubber runs after any `streamWrite` hook the logger already
 * has. When the logger has no `redact` paths of its own, Palaver's {@link REDACT_PATHS} are added; a logger with its
 * own paths keeps them (pino's child `redact` would replace them, not add to them).
 */
export function withSecretScrubbing(logger: Logger, secrets: Iterable<string | undefined | null> = []): Logger {
  const ownRedaction = Reflect.ownKeys((logger as unknown as WithSymbols)[pino.symbols.stringifiersSym] ?? {}).length > 0;
  const child = ownRedaction ? logger.child({}) : logger.child({}, { redact: { paths: [...REDACT_PATHS], censor: REDACTED } });
  const scrub = createSecretScrubber(secrets);
  const hooks = ((logger as unknown as WithSymbols)[pino.symbols.hooksSym] ?? {}) as Hooks;
  const previous = hooks.streamWrite;
  (child as unknown as WithSymbols)[pino.symbols.hooksSym] = { ...hooks, streamWrite: previous ? (line: string) => scrub(previous(line)) : scrub };
  return child;
}

/** A logger that drops everything; the default for embedded use without a logger. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
