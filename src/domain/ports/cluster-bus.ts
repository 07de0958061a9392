/**
 * Notifications between the Palaver processes that share one database: a cache entry another process changed, a
 * streamed reply for a client waiting on another process. Carried by PostgreSQL LISTEN/NOTIFY or Redis pub/sub (or
 * within one process); never a queue: a message reaches the processes listening when it is published, at most once,
 * and nothing that must happen depends on it alone (what must not be lost is in the database).
 */
export interface ClusterBus {
  /** Delivers `message` to the listeners of `topic` in every process, this one included. */
  publish(topic: ClusterTopic, message: ClusterMessage): Promise<void>;
  /** Listens to `topic` until the returned function is called. */
  subscribe(topic: ClusterTopic, listener: (message: ClusterMessage) => void): Promise<() => Promise<void>>;
  /** Stops listening and publishing; later calls are refused. */
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
