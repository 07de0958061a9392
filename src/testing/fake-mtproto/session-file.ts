import { closeSync, openSync } from 'node:fs';
import { whenCaughtUp } from '../../channels/telegram-user/catch-up.js';
import { sessionStorage } from '../../channels/telegram-user/session-storage.js';
import { createFakeClient } from './fake-client.js';
import type { FakeMtprotoLink } from './link.js';

/**
 * Makes `file` a signed-in session of the fake's account, as `palaver telegram login` would leave it: mtcute's
 * SQLite storage with an auth key (the link stores one) and the current user, and the update state of that moment (so a later start
 * catches up from there). Created owner-only.
 */
export async function signInSessionFile(link: FakeMtprotoLink, file: string): Promise<void> {
  closeSync(openSync(file, 'a', 0o600));
  const storage = sessionStorage(file);
  const client = createFakeClient(link, { storage });
  try {
    // Signing in starts the updates loop; the state is known once its first catch-up is over. Destroying the client
    // before that would leave no state, and makes mtcute 0.30 reject a promise nobody handles ("Client is destroyed").
    const caughtUp = whenCaughtUp(client, 10_000);
    await client.start({ phone: '+15550100', code: () => Promise.resolve('12345') });
    await caughtUp;
  } finally {
    await client.destroy();
  }
}
