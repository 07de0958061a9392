import { Long } from '@mtcute/node';

/**
 * JSON for TL values crossing from a spawned process to the test's fake and back: 64-bit integers (`Long`) and byte
 * strings (`Uint8Array`) are not JSON, so they travel tagged. Everything else is plain TL objects.
 */
export function encodeTl(value: unknown): string {
  return JSON.stringify(toJson(value));
}

export function decodeTl(text: string): unknown {
  return fromJson(JSON.parse(text) as unknown);
}

function toJson(value: unknown): unknown {
  if (Long.isLong(value)) return { $long: value.toString(), unsigned: value.unsigned || undefined };
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return value.map(toJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) if (inner !== undefined) out[key] = toJson(inner);
    return out;
  }
  return value;
}

function fromJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromJson);
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    if (typeof record.$long === 'string') return Long.fromString(record.$long, record.unsigned === true);
    if (typeof record.$bytes === 'string') return new Uint8Array(Buffer.from(record.$bytes, 'base64'));
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(record)) out[key] = fromJson(inner);
    return out;
  }
  return value;
}
