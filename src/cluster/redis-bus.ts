import { newId } from '../domain/ids.js';
import type { ClusterBus, ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import type { Logger } from '../observability/logger.js';
import { connectRedis, type RedisClient, type RedisConnection, type RedisSettings } from '../platform/redis-connection.js';
import { decodeEnvelope, encodeEnvelope } from './bus-envelope.js';
import { TopicListeners } from './topic-listeners.js';

export interface RedisBusOptions {
  /** The server and `keyPrefix`: the channel of topic `cache` is `<keyPrefix>bus:cache`. */
  readonly redis: RedisSettings;
  /** The id this bus stamps on what it publishes. Default: a new id. */
  readonly processId?: string;
  readonly logger?: Logger;
}

/**
 * The cluster bus on Redis pub/sub: PUBLISH on the ordinary connection (one connection: this process's messages
 * leave in order), SUBSCRIBE on a duplicate of it, since a subscribed connection can run nothing else. node-redis
 * reconnects both with bounded backoff and subscribes again itself before the connection is ready; listeners are
 * told then, since what was published meanwhile is gone.
 * @example
 * const bus = await RedisBus.open({ redis: config.redis, logger });
 */
export class RedisBus implements ClusterBus {
  readonly processId: string;
  readonly #options: RedisBusOptions;
  readonly #listeners: TopicListeners;
  readonly #connection: RedisConnection;
  readonly #subscriber: RedisClient;
  readonly #pending = new Set<Promise<unknown>>();
  #closed = false;

  /** @throws Error when Redis cannot be reached (the message names host and port, never the password). */
  static async open(options: RedisBusOptions): Promise<RedisBus> {
    const processId = options.processId ?? newId();
    const connection = await connectRedis(options.redis, { ...(options.logger ? { logger: options.logger } : {}), name: 'bus' });
    // Named, so an operator (and a test) finds it in CLIENT LIST; the name is sent again on every reconnect.
    const subscriber = connection.client.duplicate({ name: `palaver-bus:${processId}` }) as RedisClient;
    subscriber.on('error', (error: Error) => options.logger?.debug({ err: { message: error.message } }, 'cluster bus: Redis subscriber connection error'));
    try {
      await subscriber.connect();
    } catch (error) {
      if (subscriber.isOpen) subscriber.destroy();
      await connection.close();
      throw new Error(`The cluster bus cannot subscribe on Redis: ${(error as Error).message}`, { cause: error });
    }
    return new RedisBus(options, processId, connection, subscriber);
  }

  private constructor(options: RedisBusOptions, processId: string, connection: RedisConnection, subscriber: RedisClient) {
    this.#options = options;
    this.processId = processId;
    this.#listeners = new TopicListeners(options.logger);
    this.#connection = connection;
    this.#subscriber = subscriber;
    // 'ready' comes again after each reconnect, once node-redis has subscribed again.
    let connections = 0;
    subscriber.on('ready', () => {
      connections += 1;
      if (connections === 1 || this.#closed) return;
      options.logger?.info('cluster bus: subscribed on Redis again');
      this.#listeners.reconnected();
    });
    subscriber.on('end', () => {
      if (!this.#closed) options.logger?.warn('cluster bus: the Redis subscriber connection was lost; reconnecting');
    });
    // connect() already made it ready once.
    if (subscriber.isReady) connections = 1;
  }

  publish(topic: ClusterTopic, message: ClusterMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('The cluster bus is closed.'));
    let payload: string;
    try {
      payload = encodeEnvelope(topic, message, this.processId);
    } catch (error) {
      return Promise.reject(error);
    }
    const sent = this.#connection.client.publish(this.#channel(topic), payload).then(() => undefined);
    this.#pending.add(sent);
    void sent.catch(() => {}).finally(() => this.#pending.delete(sent));
    return sent;
  }

  async subscribe(topic: ClusterTopic, listener: (message: ClusterMessage, from: string) => void): Promise<() => Promise<void>> {
    if (this.#closed) throw new Error('The cluster bus is closed.');
    if (this.#listeners.add(topic, listener)) await this.#subscriber.subscribe(this.#channel(topic), (text) => this.#receive(topic, text));
    return async () => {
      if (this.#listeners.remove(topic, listener) && !this.#closed) await this.#subscriber.unsubscribe(this.#channel(topic));
    };
  }

  onReconnect(listener: () => void): () => void {
    return this.#listeners.onReconnect(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // What was published before close() still leaves; then both sockets go.
    await Promise.allSettled([...this.#pending]);
    this.#listeners.clear();
    if (this.#subscriber.isOpen) this.#subscriber.destroy();
    await this.#connection.close();
  }

  #channel(topic: ClusterTopic): string {
    return `${this.#options.redis.keyPrefix}bus:${topic}`;
  }

  #receive(topic: string, text: string): void {
    const envelope = decodeEnvelope(text);
    if (envelope === undefined) {
      this.#options.logger?.warn({ topic }, 'cluster bus: ignored a Redis message that is not a Palaver message');
      return;
    }
    this.#listeners.deliver(topic, envelope.message, envelope.from);
  }
}
