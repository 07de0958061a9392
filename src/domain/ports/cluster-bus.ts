/**
 * Notifications between the Palaver processes that share one database: a cache entry another process changed, a
 * streamed reply for a client waiting on another process. Carried by PostgreSQL LISTEN/NOTIFY or Redis pub/sub (or
 * within one process); never a queue: a message reaches the processes listening when it is published, at most once,
 * and nothing that must happen depends on it alone (what must not be lost is in the database).
 */
export interface ClusterBus {
  /** The id every message this process publishes carries, so a listener can tell (and skip) its own. */
  readonly processId: string;
  /**
   * Delivers `message` to the listeners of `topic` in every process, this one included. Messages one process
   * publishes arrive in the order it published them (also when it does not wait for each).
   * @throws Error when the message is larger than {@link MAX_CLUSTER_MESSAGE_BYTES} or the bus is closed.
   */
  publish(topic: ClusterTopic, message: ClusterMessage): Promise<void>;
  /**
   * Listens to `topic` until the returned function is called. `from` is the {@link processId} of the publisher.
   * @throws Error when the topic is not a lower-case name (letters, digits, `_`) or the bus is closed.
   */
  subscribe(topic: ClusterTopic, listener: (message: ClusterMessage, from: string) => void): Promise<() => Promise<void>>;
  /**
   * Calls `listener` each time the listening connection is back after it was lost: what was published meanwhile
   * never arrives, so a cache should forget everything then. Returns the function that stops the calls.
   */
  onReconnect(listener: () => void): () => void;
  /** Stops listening and publishing and closes the connections; later calls are refused. Safe to call twice. */
  close(): Promise<void>;
}

/** A JSON object, at most {@link MAX_CLUSTER_MESSAGE_BYTES} once serialised: large content is read from the store. */
export type ClusterMessage = Readonly<Record<string, unknown>>;

/**
 * The topics processes talk on. `cache`: a participant, state, profile, history or focus another process changed.
 * `reply`: a turn's streamed reply, for a client whose request reached another process.
 */
export type ClusterTopic = 'cache' | 'reply' | (string & {});

/** PostgreSQL's NOTIFY payload limit is 8000 bytes; below it with room for the envelope. */
export const MAX_CLUSTER_MESSAGE_BYTES = 7_000;

/** A topic is a lower-case name: it becomes part of a PostgreSQL channel (an identifier) and a Redis channel. */
export const CLUSTER_TOPIC_PATTERN = /^[a-z][a-z0-9_]{0,39}$/;
