import { hostname } from 'node:os';
import type { Store } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';

export interface ProcessRegistryOptions {
  readonly store: Store;
  readonly logger: Logger;
  /** This process, as the owner of its leases and claims. */
  readonly id: string;
  /** How long this process's leases live without a renewal: its heartbeat is stamped at least twice per lease. */
  readonly leaseMs: number;
  /** The machine and process id it runs as (defaults: this one's), for operators to read. */
  readonly host?: string;
  readonly pid?: number;
  readonly now?: () => number;
}

/** A process not heard of for this long is forgotten. */
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * This process's entry among the processes on the database, and its heartbeat there. On start it registers and
 * retires every process whose heartbeat stopped: not stamped for two leases (a stamp every half lease, then a whole
 * lease), so its leases and claims have run out too and nothing it still does can be lost. Host name and pid decide
 * nothing: containers share them (the same host name, pid 1 in each), and a restart must never retire the live work
 * of another container. A process that closes marks its heartbeat stopped, so its successor takes over at once.
 */
export class ProcessRegistry {
  readonly #options: ProcessRegistryOptions;
  readonly #host: string;
  readonly #pid: number;
  readonly #now: () => number;
  #stampedAt = 0;
  #stopped = false;

  constructor(options: ProcessRegistryOptions) {
    this.#options = options;
    this.#host = options.host ?? hostname();
    this.#pid = options.pid ?? process.pid;
    this.#now = options.now ?? Date.now;
  }

  /** Registers this process and retires those whose heartbeat stopped; returns how many messages they left. */
  async register(): Promise<number> {
    const { store, id, logger, leaseMs } = this.#options;
    const now = this.#now();
    await store.processes.register({ id, host: this.#host, pid: this.#pid, startedAt: now, heartbeatAt: now });
    this.#stampedAt = now;
    let left = 0;
    for (const other of await store.processes.list()) {
      if (other.id === id || other.heartbeatAt >= now - 2 * leaseMs) continue;
      const messages = await store.processes.retire(other.id);
      left += messages;
      logger.info({ process: other.id, host: other.host, pid: other.pid, messages }, 'taking over the work of a process whose heartbeat stopped');
    }
    await store.processes.forgetSilentSince(now - FORGET_AFTER_MS);
    return left;
  }

  /**
   * The heartbeat's part: stamps this process's record every half lease, which tells the others it is alive: they
   * retire it once the stamp is two leases old, and count its budget claims while it is within a lease
   * (`SpendRepository.reserve`).
   */
  async beat(): Promise<void> {
    const now = this.#now();
    if (this.#stopped || now - this.#stampedAt < this.#options.leaseMs / 2) return;
    await this.#options.store.processes.heartbeat(this.#options.id, now);
    this.#stampedAt = now;
  }

  /**
   * This process stops (its heartbeat rounds are over): its record says so, and the next process to start retires it
   * at once. Never throws: unmarked, the record goes stale on its own after two leases.
   */
  async stopped(): Promise<void> {
    this.#stopped = true;
    try {
      await this.#options.store.processes.heartbeat(this.#options.id, 0);
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'could not mark this process stopped; its record goes stale on its own');
    }
  }
}
