import type { EventEmitter } from 'node:events';
import { Faults } from './faults.js';
import { peopleActions } from './people.js';
import { listen } from './server.js';
import { FakeTelegramState } from './state.js';
import type { FakeTelegram } from './types.js';

export type {
  BaseInput,
  FakeCall,
  FakeEdit,
  FakeInlineKeyboard,
  FakeReaction,
  FakeSentMessage,
  FakeTelegram,
  FakeUpdate,
  FakeUser,
  TextInput,
} from './types.js';

/**
 * Starts a fake Telegram Bot API server on loopback (see `FakeTelegram`): what people send (`people.ts`), the Bot
 * API methods the channel calls (`bot-api.ts`), the faults a test orders (`faults.ts`), served over HTTP
 * (`server.ts`) from one state (`state.ts`).
 */
export async function startFakeTelegram(options: { token?: string; botUsername?: string; port?: number } = {}): Promise<FakeTelegram> {
  const state = new FakeTelegramState(options);
  const { events, sent, calls } = state;
  const faults = new Faults(events);
  const server = await listen(state, faults, options.port ?? 0);
  return {
    apiRoot: `http://127.0.0.1:${server.port}`,
    token: state.token,
    bot: state.bot,
    calls,
    sent,
    reactions: state.reactions,
    edits: state.edits,
    updates: state.updates,
    get webhook() {
      return state.webhook;
    },
    commands: state.commands,
    ...peopleActions(state),
    failNext: (method, failure) => faults.failNext(method, failure),
    loseResponseNext: (method) => faults.loseResponseNext(method),
    holdResponseNext: (method) => faults.holdResponseNext(method),
    setConflict(on) {
      state.conflict = on;
      if (on) state.pendingPoll?.conflict();
    },
    hang: (method, on) => faults.hang(method, on),
    hanging: (method) => faults.hanging(method),
    async deliverToWebhook(update, deliverOptions = {}) {
      const webhook = state.webhook;
      if (!webhook) throw new Error('No webhook is registered (setWebhook was not called).');
      const secret = deliverOptions.secretToken === undefined ? webhook.secretToken : deliverOptions.secretToken;
      const response = await fetch(webhook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(secret ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    waitForMessages(count, waitOptions = {}) {
      const pick = () => (waitOptions.chatId === undefined ? sent : sent.filter((message) => message.chatId === waitOptions.chatId));
      return waitFor(
        events,
        'sent',
        () => (pick().length >= count ? pick() : undefined),
        waitOptions.timeoutMs ?? 10_000,
        () => `${count} sent message(s)${waitOptions.chatId === undefined ? '' : ` to chat ${waitOptions.chatId}`}; have ${pick().length}`,
      );
    },
    waitForCall(method, match = () => true, waitOptions = {}) {
      return waitFor(
        events,
        'call',
        () => calls.find((call) => call.method === method && match(call)),
        waitOptions.timeoutMs ?? 10_000,
        () => `a ${method} call`,
      );
    },
    callsOf: (method) => calls.filter((call) => call.method === method),
    sentTo: (chatId) => sent.filter((message) => message.chatId === chatId),
    close: () => {
      faults.releaseAll();
      return server.close();
    },
  };
}

/** Resolves with `check()` once it is defined, re-checked on each `event`; rejects after `timeoutMs`. */
function waitFor<T>(events: EventEmitter, event: string, check: () => T | undefined, timeoutMs: number, describe: () => string): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<T>((resolve, reject) => {
    const onEvent = () => {
      const value = check();
      if (value === undefined) return;
      clearTimeout(timer);
      events.off(event, onEvent);
      resolve(value);
    };
    const timer = setTimeout(() => {
      events.off(event, onEvent);
      reject(new Error(`Fake Telegram: timed out after ${timeoutMs} ms waiting for ${describe()}`));
    }, timeoutMs);
    events.on(event, onEvent);
  });
}
