import type { ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import { checkTopic } from './bus-envelope.js';

type Listener = (message: ClusterMessage, from: string) => void;

/**
 * The listeners of one bus, by topic, and those waiting for a reconnect. Each bus keeps one subscription per topic
 * on its connection and fans the messages out here; a listener that throws is logged and the others still run.
 */
export class TopicListeners {
  readonly #byTopic = new Map<string, Set<Listener>>();
  readonly #reconnect = new Set<() => void>();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** Adds `listener`; true when it is the topic's first (the bus must start listening to it). */
  add(topic: ClusterTopic, listener: Listener): boolean {
    checkTopic(topic);
    const listeners = this.#byTopic.get(topic) ?? new Set();
    listeners.add(listener);
    this.#byTopic.set(topic, listeners);
    return listeners.size === 1;
  }

  /** Removes `listener`; true when the topic has no listener left (the bus may stop listening to it). */
  remove(topic: ClusterTopic, listener: Listener): boolean {
    const listeners = this.#byTopic.get(topic);
    if (!listeners?.delete(listener)) return false;
    if (listeners.size > 0) return false;
    this.#byTopic.delete(topic);
    return true;
  }

  /** The topics someone listens to: what a new connection subscribes to. */
  topics(): string[] {
    return [...this.#byTopic.keys()];
  }

  has(topic: ClusterTopic): boolean {
    return this.#byTopic.has(topic);
  }

  deliver(topic: ClusterTopic, message: ClusterMessage, from: string): void {
    for (const listener of [...(this.#byTopic.get(topic) ?? [])]) {
      try {
        listener(message, from);
      } catch (error) {
        this.#logger?.error({ err: error, topic }, 'a cluster bus listener failed');
      }
    }
  }

  onReconnect(listener: () => void): () => void {
    this.#reconnect.add(listener);
    return () => this.#reconnect.delete(listener);
  }

  reconnected(): void {
    for (const listener of [...this.#reconnect]) {
      try {
        listener();
      } catch (error) {
        this.#logger?.error({ err: error }, 'a cluster bus reconnect listener failed');
      }
    }
  }

  clear(): void {
    this.#byTopic.clear();
    this.#reconnect.clear();
  }
}
