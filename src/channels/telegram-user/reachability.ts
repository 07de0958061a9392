import { defaultProductionDc, type DcOptions } from '@mtcute/core/utils.js';
import { tl, type TelegramClient } from '@mtcute/node';
import { ChannelError } from '../../domain/errors.js';
import { TELEGRAM_USER_CHANNEL } from './channel-name.js';

/** How long a first answer from Telegram may take before the command gives up. A handshake takes well under 2 s. */
export const REACH_TIMEOUT_MS = 8_000;
/** Failed connection attempts (refused, closed) in a row, before any answer, that count as "cannot be reached". */
const FAILED_ATTEMPTS = 3;

export interface ReachOptions {
  /** Default {@link REACH_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/**
 * Resolves once Telegram has answered one call on `client` (connected, not yet used): any answer, an RPC error too,
 * proves the way there works. mtcute itself retries a connection that fails forever and queues calls meanwhile, so a
 * login without network would wait after the phone number without a word; this ends that after `timeoutMs`, or
 * sooner when connections keep being refused or closed.
 * @throws ChannelError `telegram_unreachable`, naming the address tried, the last network error and what to check.
 */
export async function ensureTelegramReachable(client: TelegramClient, options: ReachOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? REACH_TIMEOUT_MS;
  const aborted = new AbortController();
  const errors: string[] = [];
  let giveUp: (reason: string) => void = () => {};
  const gaveUp = new Promise<string>((resolve) => {
    giveUp = resolve;
  });
  const onError = (error: Error) => {
    errors.push(error.message);
    if (errors.length >= FAILED_ATTEMPTS) giveUp(`${errors.length} connection attempts failed`);
  };
  client.onError.add(onError);
  const timer = setTimeout(() => giveUp(`no answer within ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
  // help.getConfig needs no sign-in and changes nothing: a cheap first call.
  const answered = client.call({ _: 'help.getConfig' }, { abortSignal: aborted.signal }).then(
    () => undefined,
    (error: unknown) => (tl.RpcError.is(error) ? undefined : error instanceof Error ? error.message : String(error)),
  );
  try {
    const outcome = await Promise.race([answered.then((failure) => ({ failure })), gaveUp.then((reason) => ({ reason }))]);
    if ('failure' in outcome && outcome.failure === undefined) return;
    const reason = 'reason' in outcome ? outcome.reason : `the first call failed (${outcome.failure})`;
    aborted.abort();
    throw new ChannelError(
      'telegram_unreachable',
      TELEGRAM_USER_CHANNEL,
      `Cannot reach Telegram at ${await describeDataCentre(client)}: ${reason}${errors.length > 0 ? `; last error: ${errors.at(-1)}` : ''}. ` +
        'Check that this machine is online and that outgoing TCP connections to Telegram (port 443) are allowed: a firewall, a VPN, ' +
        'or a network where Telegram is blocked stops them. Then run the command again; nothing was sent and the session is unchanged.',
    );
  } finally {
    clearTimeout(timer);
    client.onError.remove(onError);
  }
}

/** `data centre 2 (149.154.167.50:443)`: the session's own data centre when it has one, else mtcute's default. */
async function describeDataCentre(client: TelegramClient): Promise<string> {
  // mtcute keeps the session's data centre in its low-level storage, which the high-level client does not type.
  const low = (client as unknown as { _client?: { mt?: { storage?: { dcs?: { fetch(): Promise<DcOptions | null> } } } } })._client;
  const stored = await Promise.resolve(low?.mt?.storage?.dcs?.fetch()).catch(() => undefined);
  const main = (stored ?? defaultProductionDc).main;
  return `data centre ${main.id} (${main.ipAddress}:${main.port})`;
}
