import { z } from 'zod';
import { MAX_CLUSTER_MESSAGE_BYTES, type ClusterBus } from '../../domain/ports/cluster-bus.js';
import { newId } from '../../domain/ids.js';
import type { Logger } from '../../observability/logger.js';
import { addressGroup } from '../../platform/address-group.js';

/** The bus topic a conversation's page events travel on between processes. */
export const CONVERSATION_TOPIC = 'web_conversation';

/**
 * What an open page of a conversation is told outside any run: an operator's message (`operator` is who wrote it, as
 * the audit names them; the page is shown a label instead), a pause or resume of the agent, a reply no run of the page
 * carried (a message held while paused, answered on resume), or `refresh`: read the transcript again (an event too
 * large for the bus, or one a reconnecting page may have missed).
 */
export type ConversationEvent =
  | { readonly type: 'operator_message'; readonly id: string; readonly text: string; readonly operator: string; readonly at: string }
  | { readonly type: 'paused'; readonly paused: boolean }
  | { readonly type: 'reply'; readonly id: string; readonly text: string }
  | { readonly type: 'refresh' };

const eventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('operator_message'), id: z.string().min(1), text: z.string(), operator: z.string().min(1), at: z.string() }),
  z.object({ type: z.literal('paused'), paused: z.boolean() }),
  z.object({ type: z.literal('reply'), id: z.string().min(1), text: z.string() }),
  z.object({ type: z.literal('refresh') }),
]);
const envelopeSchema = z.object({ v: z.literal(1), channel: z.string(), origin: z.string().min(1), conversationId: z.string().min(1), event: z.unknown() });

/** One open page of a conversation: what it is sent, and how to end it. */
export interface ConversationWatcher {
  readonly accountId: string;
  /** The client's address (grouped as the visitor limits group it), when the server knows it. */
  readonly address?: string | undefined;
  send(event: ConversationEvent): void;
  close(): void;
}

export interface ConversationEventsOptions {
  /** The channel's name, carried in every bus message: a process only takes its own channel's. */
  readonly channel: string;
  /** Present when processes are several (`cluster.bus` shared): events then reach pages open on the others. */
  readonly bus?: ClusterBus | undefined;
  readonly logger: Logger;
  /** Pages one account may hold open at once; a newer one ends the oldest. Default 4. */
  readonly maxPerAccount?: number;
  /**
   * Pages all callers of one address may hold open at once; past it a new one is refused (a visitor cookie costs
   * nothing, so the cap per account alone bounds nothing). Default 32; 0: no limit.
   */
  readonly maxPerAddress?: number;
}

/**
 * The open pages of each conversation, and what they are told between runs. `publish` shows an event on this
 * process's pages of the conversation and, with a bus, on the other processes'. A bus message carries the
 * conversation id and the event, never a caller: the receiving process shows it only on pages it opened for callers it
 * identified itself as the conversation's owner. The bus may lose a message; the transcript (which a reconnecting page
 * reads again) has everything that matters.
 */
export class ConversationEvents {
  /** This channel's id on the bus: its own messages come back to it and are skipped (it showed them already). */
  readonly origin = newId();
  readonly #options: ConversationEventsOptions;
  readonly #watchers = new Map<string, Set<ConversationWatcher>>();
  readonly #byAccount = new Map<string, ConversationWatcher[]>();
  readonly #byAddress = new Map<string, number>();
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(options: ConversationEventsOptions) {
    this.#options = options;
  }

  /** Listens to the other processes' events, when there is a bus. */
  async start(): Promise<void> {
    const { bus } = this.#options;
    if (bus) this.#unsubscribe = await bus.subscribe(CONVERSATION_TOPIC, (message) => this.#receive(message));
  }

  /** Stops listening and ends every open page (it reconnects to another process). Safe to call twice. */
  async stop(): Promise<void> {
    const unsubscribe = this.#unsubscribe;
    this.#unsubscribe = undefined;
    for (const set of [...this.#watchers.values()]) for (const watcher of [...set]) watcher.close();
    await unsubscribe?.().catch(() => undefined);
  }

  /** Whether another page may be opened from `address` (see `maxPerAddress`). */
  hasRoomFor(address: string | undefined): boolean {
    const max = this.#options.maxPerAddress ?? 32;
    if (address === undefined || max === 0) return true;
    return (this.#byAddress.get(addressGroup(address)) ?? 0) < max;
  }

  /** Adds an open page of `conversationId`; returns the function that removes it. The account's oldest page past the cap ends. */
  watch(conversationId: string, watcher: ConversationWatcher): () => void {
    const address = watcher.address === undefined ? undefined : addressGroup(watcher.address);
    if (address !== undefined) this.#byAddress.set(address, (this.#byAddress.get(address) ?? 0) + 1);
    let set = this.#watchers.get(conversationId);
    if (!set) this.#watchers.set(conversationId, (set = new Set()));
    set.add(watcher);
    const mine = this.#byAccount.get(watcher.accountId) ?? [];
    mine.push(watcher);
    this.#byAccount.set(watcher.accountId, mine);
    if (mine.length > (this.#options.maxPerAccount ?? 4)) mine[0]?.close();
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      if (address !== undefined) {
        const left = (this.#byAddress.get(address) ?? 1) - 1;
        if (left <= 0) this.#byAddress.delete(address);
        else this.#byAddress.set(address, left);
      }
      set.delete(watcher);
      if (set.size === 0 && this.#watchers.get(conversationId) === set) this.#watchers.delete(conversationId);
      const left = (this.#byAccount.get(watcher.accountId) ?? []).filter((other) => other !== watcher);
      if (left.length === 0) this.#byAccount.delete(watcher.accountId);
      else this.#byAccount.set(watcher.accountId, left);
    };
  }

  /** Shows `event` on every open page of the conversation, here and (with a bus) in the other processes. */
  publish(conversationId: string, event: ConversationEvent): void {
    this.#show(conversationId, event);
    const { bus, channel } = this.#options;
    if (!bus) return;
    let message: Record<string, unknown> = { v: 1, channel, origin: this.origin, conversationId, event };
    // A long message does not fit one notification: the other processes' pages read it from the transcript.
    if (Buffer.byteLength(JSON.stringify(message)) > MAX_CLUSTER_MESSAGE_BYTES) message = { ...message, event: { type: 'refresh' } };
    bus.publish(CONVERSATION_TOPIC, message).catch((error: unknown) => {
      this.#options.logger.warn({ err: error }, 'could not tell the other processes about a conversation event; their pages show it on reload');
    });
  }

  #show(conversationId: string, event: ConversationEvent): void {
    for (const watcher of [...(this.#watchers.get(conversationId) ?? [])]) watcher.send(event);
  }

  #receive(raw: unknown): void {
    const envelope = envelopeSchema.safeParse(raw);
    const event = envelope.success ? eventSchema.safeParse(envelope.data.event) : undefined;
    if (!envelope.success || !event?.success) {
      this.#options.logger.warn('ignored a malformed conversation event from the cluster bus');
      return;
    }
    if (envelope.data.channel === this.#options.channel && envelope.data.origin !== this.origin) this.#show(envelope.data.conversationId, event.data);
  }
}
