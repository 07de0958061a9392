import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got: its headers, raw body, parsed JSON, and whether its signature held. */
export interface ReceivedWebhook {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly json: Record<string, unknown>;
  readonly verified: boolean;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** The status the next requests are answered with (default 204); a 3xx carries `Location: /elsewhere`. */
  answerWith(status: number): void;
  close(): Promise<void>;
}

/**
 * A receiver of Palaver's signed webhooks on loopback, checking each signature as docs/operator-actions.md tells a
 * receiver to (the function below is that snippet), not with Palaver's own code.
 */
export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let status = 204;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body,
        json: JSON.parse(body || '{}'),
        verified: verifyPalaverWebhook(secret, request.headers, body),
      });
      response.writeHead(status, status >= 300 && status < 400 ? { location: '/elsewhere' } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/palaver-handoffs`,
    received,
    answerWith: (next) => void (status = next),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// ── The receiver's check as docs/operator-actions.md shows it ──────────────────────────────────────────────────

/** True when a Palaver handoff notice is authentic and fresh. `body` is the raw request body, as received. */
function verifyPalaverWebhook(secret: string, headers: IncomingHttpHeaders, body: string, toleranceSeconds = 300): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret, 'utf8');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    const given = Buffer.from(value ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}
