import type { ClusterBus, ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import { MAX_CLUSTER_MESSAGE_BYTES } from '../domain/ports/cluster-bus.js';

/**
 * The bus of a Palaver that runs alone (SQLite, or one process): listeners in this process only. Messages are
 * serialised and parsed as the networked buses do, so a listener never shares an object with the publisher and a
 * message too large for PostgreSQL fails here too.
 */
export class LocalBus implements ClusterBus {
  readonly #listeners = new Map<string, Set<(message: ClusterMessage) => void>>();
  #closed = false;

  async publish(topic: ClusterTopic, message: ClusterMessage): Promise<void> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    const text = JSON.stringify(message);
    if (Buffer.byteLength(text) > MAX_CLUSTER_MESSAGE_BYTES) throw new Error(`A cluster message on "${topic}" is larger than ${MAX_CLUSTER_MESSAGE_BYTES} bytes.`);
    for (const listener of [...(this.#listeners.get(topic) ?? [])]) listener(JSON.parse(text) as ClusterMessage);
  }

  async subscribe(topic: ClusterTopic, listener: (message: ClusterMessage) => void): Promise<() => Promise<void>> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    const listeners = this.#listeners.get(topic) ?? new Set();
    listeners.add(listener);
    this.#listeners.set(topic, listeners);
    return async () => {
      listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
  }
}
