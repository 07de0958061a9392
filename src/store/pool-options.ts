/** Pool settings of the server databases (PostgreSQL, MariaDB/MySQL): each dialect's opening takes them. */
export interface DatabasePoolOptions {
  /** Most connections the pool opens; default 10. */
  readonly poolSize?: number;
  /** Server-side limit per statement in milliseconds; default 30 000. */
  readonly statementTimeoutMs?: number;
  /** How long to wait for a connection in milliseconds; default 10 000. */
  readonly connectTimeoutMs?: number;
  /**
   * Called when an idle pooled connection fails (e.g. the server restarted). The pool drops that connection and
   * opens a new one on demand; without a listener Node would crash the process on the unhandled `error` event.
   */
  readonly onPoolError?: (error: Error) => void;
}
