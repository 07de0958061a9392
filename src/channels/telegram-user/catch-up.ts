import type { ConnectionState, TelegramClient } from '@mtcute/node';

/**
 * Resolves once `client` went through catch-up (`updating`) and back to `connected`, or after `timeoutMs`. Call it
 * before the updates loop starts, so that the `updating` is seen. mtcute also says `connected` when its network
 * becomes usable, which can happen mid catch-up (a slow connect): that one does not count, or a new session would be
 * taken as knowing where Telegram's updates stand before it does, and a message arriving then would count as seen.
 */
export function whenCaughtUp(client: TelegramClient, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let updating = false;
    const done = () => {
      clearTimeout(timer);
      client.onConnectionState.remove(listener);
      resolve();
    };
    const listener = (state: ConnectionState) => {
      if (state === 'updating') updating = true;
      else if (state === 'connected' && updating && !isCatchingUp(client)) done();
    };
    const timer = setTimeout(done, timeoutMs);
    client.onConnectionState.add(listener);
  });
}

/**
 * Whether mtcute's updates manager is still catching up. `TelegramClient` keeps it on its base client (`_client`, public
 * in mtcute's types; a worker-backed client has none, and then the state events alone decide).
 */
function isCatchingUp(client: TelegramClient): boolean {
  const base = client._client as { readonly updates?: { readonly catchingUp?: boolean } };
  return base.updates?.catchingUp === true;
}
