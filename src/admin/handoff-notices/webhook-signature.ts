import { createHmac } from 'node:crypto';

/** A Standard Webhooks secret: `whsec_` and the key in base64, as the spec's libraries generate and expect it. */
const STANDARD_SECRET = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/**
 * The HMAC key of `operators.notify.webhookSecret`: a Standard Webhooks secret (`whsec_…`) is the base64 after its
 * prefix, so a receiver can give the same string to a Standard Webhooks library; any other secret is its UTF-8 bytes.
 */
export function webhookKey(secret: string): Buffer {
  const standard = STANDARD_SECRET.exec(secret);
  return standard === null ? Buffer.from(secret, 'utf8') : Buffer.from(standard[1]!, 'base64');
}

/**
 * The `webhook-signature` header of the Standard Webhooks spec: `v1,` and the base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>` under the secret's key.
 */
export function webhookSignature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', webhookKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}
