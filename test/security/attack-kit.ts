import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { SignJWT } from 'jose';
import type { ScriptedCall } from '../../src/testing/index.js';
import { parseSse } from '../server/sse.js';
import { readSqliteFile } from '../support/sqlite-file.js';

/** What an attacker sees of a response. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/**
 * One HTTP request with exactly the headers given (fetch would refuse to set `Host` or add its own), as a browser,
 * a form, curl or a rebinding page would send it.
 */
export function send(base: string, options: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<RawResponse> {
  const url = new URL(options.path, base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        setHost: !Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === 'host'),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(15_000, () => req.destroy(new Error('request timed out')));
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** A RunAgentInput as the chat page sends it. */
export function runInput(threadId: string, text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    threadId,
    runId: `run-${Math.random().toString(36).slice(2)}`,
    messages: [{ id: `m-${Math.random().toString(36).slice(2)}`, role: 'user', content: text }],
    tools: [],
    context: [],
    state: {},
    forwardedProps: {},
    ...extra,
  };
}

/** `POST /agui` with a JSON body and the given headers. */
export function postRun(base: string, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return send(base, {
    method: 'POST',
    path: '/agui',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A new visitor: loads the page and keeps the cookie it was given (`name=value`). */
export async function newVisitor(base: string): Promise<{ cookie: string; accountId: string }> {
  const page = await send(base, { path: '/' });
  const setCookie = page.headers['set-cookie']?.[0];
  if (page.status !== 200 || setCookie === undefined) throw new Error(`the page gave no cookie (${page.status})`);
  const cookie = setCookie.split(';')[0]!;
  return { cookie, accountId: `visitor:${cookie.split('=')[1]!.split('.')[1]}` };
}

/** The events of a finished SSE response. */
export function events(response: RawResponse): Array<Record<string, unknown> & { type: string }> {
  return parseSse(response.body);
}

/** The reply text a run showed. */
export function shownText(response: RawResponse): string {
  return events(response)
    .filter((e) => e.type === 'TEXT_MESSAGE_CONTENT')
    .map((e) => e.delta as string)
    .join('');
}

const COUNTED = ['users', 'channel_accounts', 'sessions', 'messages', 'inbound_messages', 'tool_calls'] as const;

/** Rows per table of a SQLite file, read on a separate read-only connection. */
export function rowCounts(databaseUrl: string): Record<(typeof COUNTED)[number], number> {
  return readSqliteFile(databaseUrl, (db) => {
    const out = {} as Record<(typeof COUNTED)[number], number>;
    for (const table of COUNTED) out[table] = Number(db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)?.n);
    return out;
  });
}

/** Texts of every stored message (user and assistant), for "nothing of the attack was stored". */
export function storedTexts(databaseUrl: string): string[] {
  return readSqliteFile(databaseUrl, (db) => {
    const messages = db.all<{ text: string }>('SELECT content AS text FROM messages');
    const inbound = db.all<{ text: string }>('SELECT text FROM inbound_messages');
    return [...messages, ...inbound].map((row) => row.text);
  });
}

/** The model echoes the last user text it saw, so a reply tells whose history answered. */
export function echoScript(call: ScriptedCall): { text: string; delayMs?: number } {
  const said = [...call.messages].reverse().find((item) => item.type === 'message' && 'role' in item && item.role === 'user') as
    | { content?: string }
    | undefined;
  const text = said?.content ?? '';
  return { text: `echo: ${text}`, ...(text.includes('slow') ? { delayMs: 600 } : {}) };
}

/** An HS256 user token as an embedding site would mint it. */
export function userToken(secret: string, claims: { sub?: string; iss?: string; aud?: string; expiresIn?: string | number; noExp?: boolean }): Promise<string> {
  let jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuedAt();
  if (claims.sub !== undefined) jwt = jwt.setSubject(claims.sub);
  if (claims.iss !== undefined) jwt = jwt.setIssuer(claims.iss);
  if (claims.aud !== undefined) jwt = jwt.setAudience(claims.aud);
  if (!claims.noExp) jwt = jwt.setExpirationTime(claims.expiresIn ?? '5m');
  return jwt.sign(new TextEncoder().encode(secret));
}

/**
 * Sends request headers and only part of the body over a raw socket, then waits; resolves with what the server
 * answered (the status line, or '' if it only closed) and how long it took.
 */
export function halfBody(base: string, path: string, declaredBytes: number, sentBody: string): Promise<{ statusLine: string; closedAfterMs: number }> {
  // Resolves at the first status line the server sends, or when it closes the connection without one.
  const url = new URL(base);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('connect', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${declaredBytes}\r\n\r\n${sentBody}`);
    });
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      resolve({ statusLine: received.split('\r\n')[0] ?? '', closedAfterMs: Date.now() - started });
      socket.destroy();
    };
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
      if (received.includes('\r\n')) finish();
    });
    socket.on('close', finish);
    socket.on('error', reject);
    socket.setTimeout(20_000, () => socket.destroy(new Error('the server held a half-sent request for 20 s')));
  });
}
