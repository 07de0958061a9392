import { z } from 'zod';
import type { ClusterBus } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';

/** The topic processes greet each other on. */
export const PRESENCE_TOPIC = 'presence';

/** What a `presence` message may say: anyone who reaches the database or Redis can publish one, so it is checked. */
const presenceSchema = z.strictObject({ kind: z.enum(['hello', 'here', 'bye']) });

/** How long a new process announces its changes before it believes it is alone: its greeting's answers come in ms. */
export const DEFAULT_PRESENCE_GRACE_MS = 2_000;

export interface ClusterPeersOptions {
  readonly bus: ClusterBus;
  readonly logger: Logger;
  /**
   * Another process answered this one's greeting. What it changed before it heard of this process was not announced
   * to it, so whatever this process read meanwhile may be stale (a cache forgets everything).
   */
  readonly onMet: () => void;
  /** See {@link DEFAULT_PRESENCE_GRACE_MS}. */
  readonly graceMs?: number;
}

/**
 * Which other processes listen on the bus, so that a process alone (SQLite, or one process on a database) encodes
 * and publishes nothing no one would read. A process greets on start (`hello`), and again after its listening
 * connection came back; every process that hears a greeting answers (`here`) and counts the newcomer, which counts
 * those that answer. One that closes says `bye`; one that crashed stays counted (it costs messages, never a
 * change missed). Until its greeting had time to be answered, a new process counts as not alone.
 */
export class ClusterPeers {
  readonly #options: ClusterPeersOptions;
  readonly #peers = new Set<string>();
  readonly #startedAt = Date.now();
  readonly #graceMs: number;
  #unsubscribe: (() => Promise<void>) | undefined;

  private constructor(options: ClusterPeersOptions) {
    this.#options = options;
    this.#graceMs = options.graceMs ?? DEFAULT_PRESENCE_GRACE_MS;
  }

  /** Listens for the other processes and greets them. */
  static async start(options: ClusterPeersOptions): Promise<ClusterPeers> {
    const peers = new ClusterPeers(options);
    peers.#unsubscribe = await options.bus.subscribe(PRESENCE_TOPIC, (message, from) => peers.#receive(message, from));
    // Awaited: a process that starts after this returns does not hear this greeting, only answers its own.
    await peers.#say('hello');
    return peers;
  }

  /** Whether no other process listens (as far as this one knows): then nothing needs announcing. */
  get alone(): boolean {
    return this.#peers.size === 0 && Date.now() - this.#startedAt >= this.#graceMs;
  }

  /** How many other processes this one knows of. */
  get count(): number {
    return this.#peers.size;
  }

  /** Another process published something: it listens too (a process of an earlier version greets no one). */
  heardFrom(processId: string): void {
    if (processId !== this.#options.bus.processId) this.#peers.add(processId);
  }

  /** Greets the processes listening now; they answer. */
  greet(): void {
    void this.#say('hello');
  }

  /** Says goodbye and stops listening. */
  async stop(): Promise<void> {
    void this.#say('bye');
    await this.#unsubscribe?.().catch(() => {});
  }

  #receive(message: unknown, from: string): void {
    if (from === this.#options.bus.processId) return;
    const parsed = presenceSchema.safeParse(message);
    if (!parsed.success) {
      this.#options.logger.warn({ from }, 'cluster bus: ignored a presence message that is not one');
      return;
    }
    switch (parsed.data.kind) {
      case 'hello':
        this.#peers.add(from);
        void this.#say('here');
        break;
      case 'here':
        this.#peers.add(from);
        this.#options.onMet();
        break;
      case 'bye':
        this.#peers.delete(from);
        break;
    }
  }

  #say(kind: 'hello' | 'here' | 'bye'): Promise<void> {
    return this.#options.bus.publish(PRESENCE_TOPIC, { kind }).catch((error: unknown) => {
      this.#options.logger.warn({ err: error, kind }, 'could not greet the other processes on the cluster bus');
    });
  }
}
