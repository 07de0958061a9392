import type { RedisConnection } from '../platform/redis-connection.js';

/**
 * Who runs a tool call, decided atomically in Redis (one Lua script), so the same call delivered twice — two
 * stream entries for one call, or one entry read by two workers after a reclaim — runs once.
 *
 * Keys, under `redis.keyPrefix`, per call (`<c>` the correlation id, `<t>` the tool call id):
 * - `tools.result:<c>:<t>`: the call's first `ToolCallCompleted` (see wire.ts), kept `resultTtlMs`.
 * - `tools.cancelled:<c>:<t>`: the runtime cancelled the call (a `ToolCallCancelled` entry was read).
 * - `tools.claim:<c>:<t>`: the worker running it now, with an expiry its holder renews while the tool runs.
 * - `tools.call:<c>:<t>`: a hash of how many times a worker started the call (`attempts`) and the last error.
 */
export type ClaimOutcome =
  /** The call finished before: its stored `ToolCallCompleted` JSON, to send again. */
  | { readonly kind: 'done'; readonly result: string }
  | { readonly kind: 'cancelled' }
  /** Another worker holds the claim: it is running the call now. */
  | { readonly kind: 'busy' }
  /** Started `tools.maxAttempts` times without a result: give up, with the last error recorded. */
  | { readonly kind: 'dead'; readonly attempts: number; readonly error: string }
  /** This worker now holds the claim; `attempt` counts this start. */
  | { readonly kind: 'run'; readonly attempt: number };

// KEYS: result, cancelled, claim, call. ARGV: worker id, claim ttl ms, max attempts, call-state ttl ms, the error to
// record should this start never finish (a worker that dies leaves no error of its own).
const CLAIM_SCRIPT = `
local result = redis.call('GET', KEYS[1])
if result then return {'done', result} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'cancelled'} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'busy'} end
local attempts = tonumber(redis.call('HGET', KEYS[4], 'attempts') or '0')
if attempts >= tonumber(ARGV[3]) then
  return {'dead', tostring(attempts), redis.call('HGET', KEYS[4], 'error') or ''}
end
redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[4], 'attempts', attempts + 1, 'error', ARGV[5])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
return {'run', tostring(attempts + 1)}
`;

// KEYS: claims to renew. ARGV: worker id, claim ttl ms. Renews only claims this worker still holds.
const RENEW_SCRIPT = `
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('PEXPIRE', key, ARGV[2]) end
end
return 0
`;

/** The per-call keys of one call. */
export interface CallKeys {
  readonly result: string;
  readonly cancelled: string;
  readonly claim: string;
  readonly call: string;
}

export function callKeys(redis: Pick<RedisConnection, 'key'>, correlationId: string, toolCallId: string): CallKeys {
  const id = `${correlationId}:${toolCallId}`;
  return {
    result: redis.key(`tools.result:${id}`),
    cancelled: redis.key(`tools.cancelled:${id}`),
    claim: redis.key(`tools.claim:${id}`),
    call: redis.key(`tools.call:${id}`),
  };
}

/** The two scripts, loaded once and run by SHA (loaded again when Redis lost them, e.g. after a restart). */
export class CallClaims {
  readonly #redis: RedisConnection;
  readonly #workerId: string;
  readonly #settings: { readonly claimTtlMs: number; readonly maxAttempts: number; readonly stateTtlMs: number };
  readonly #shas = new Map<string, Promise<string>>();

  constructor(redis: RedisConnection, workerId: string, settings: { readonly claimTtlMs: number; readonly maxAttempts: number; readonly stateTtlMs: number }) {
    this.#redis = redis;
    this.#workerId = workerId;
    this.#settings = settings;
  }

  async claim(keys: CallKeys): Promise<ClaimOutcome> {
    const { claimTtlMs, maxAttempts, stateTtlMs } = this.#settings;
    const reply = (await this.#run(
      CLAIM_SCRIPT,
      [keys.result, keys.cancelled, keys.claim, keys.call],
      [this.#workerId, String(claimTtlMs), String(maxAttempts), String(stateTtlMs), `worker ${this.#workerId} started the call and stopped before it finished`],
    )) as string[];
    switch (reply[0]) {
      case 'done':
        return { kind: 'done', result: reply[1]! };
      case 'cancelled':
        return { kind: 'cancelled' };
      case 'busy':
        return { kind: 'busy' };
      case 'dead':
        return { kind: 'dead', attempts: Number(reply[1]), error: reply[2] ?? '' };
      default:
        return { kind: 'run', attempt: Number(reply[1]) };
    }
  }

  async renew(claims: readonly string[]): Promise<void> {
    if (claims.length === 0) return;
    await this.#run(RENEW_SCRIPT, [...claims], [this.#workerId, String(this.#settings.claimTtlMs)]);
  }

  async #run(script: string, keys: string[], args: string[]): Promise<unknown> {
    const { client } = this.#redis;
    let sha = this.#shas.get(script);
    if (sha === undefined) {
      sha = client.scriptLoad(script);
      this.#shas.set(script, sha);
      sha.catch(() => this.#shas.delete(script));
    }
    try {
      return await client.evalSha(await sha, { keys, arguments: args });
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      this.#shas.delete(script);
      return client.eval(script, { keys, arguments: args });
    }
  }
}
