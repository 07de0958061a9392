import { newId } from '../domain/ids.js';
import type { ClusterBus, ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import { decodeEnvelope, encodeEnvelope } from './bus-envelope.js';
import { TopicListeners } from './topic-listeners.js';

export interface LocalBusOptions {
  /** The id this bus stamps on what it publishes. Default: a new id. */
  readonly processId?: string;
  readonly logger?: Logger;
}

/**
 * The bus of a Palaver that runs alone (SQLite, or one process): listeners in this process only. Messages are
 * serialised and parsed as the networked buses do, so a listener never shares an object with the publisher and a
 * message too large for PostgreSQL fails here too.
 */
export class LocalBus implements ClusterBus {
  readonly processId: string;
  readonly #listeners: TopicListeners;
  #closed = false;

  constructor(options: LocalBusOptions = {}) {
    this.processId = options.processId ?? newId();
    this.#listeners = new TopicListeners(options.logger);
  }

  async publish(topic: ClusterTopic, message: ClusterMessage): Promise<void> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    const envelope = decodeEnvelope(encodeEnvelope(topic, message, this.processId))!;
    this.#listeners.deliver(topic, envelope.message, envelope.from);
  }

  async subscribe(topic: ClusterTopic, listener: (message: ClusterMessage, from: string) => void): Promise<() => Promise<void>> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    this.#listeners.add(topic, listener);
    return async () => {
      this.#listeners.remove(topic, listener);
    };
  }

  /** Never called: nothing here can lose its connection. */
  onReconnect(listener: () => void): () => void {
    return this.#listeners.onReconnect(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
  }
}
