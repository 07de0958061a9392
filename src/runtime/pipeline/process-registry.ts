import { hostname } from 'node:os';
import type { Store } from '../../domain/ports/store.js';
import type { Logger } from '../../observability/logger.js';

export interface ProcessRegistryOptions {
  readonly store: Store;
  readonly logger: Logger;
  /** This process, as the owner of its leases and claims. */
  readonly id: string;
  /** The machine and process id it runs as (defaults: this one's). */
  readonly host?: string;
  readonly pid?: number;
  /** Whether a process id is running on this machine (default: `process.kill(pid, 0)`). */
  readonly isRunning?: (pid: number) => boolean;
  readonly now?: () => number;
}

/** A process not heard of for this long is forgotten. */
const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;
/** The Palavers running in this Node process (tests and embedders run several in one), which share its pid. */
const runningHere = new Set<string>();

/**
 * This process's entry among the processes on the database. On start it registers and retires the processes it
 * replaces: a record of this machine whose process id is no longer running, or is its own (a container restarted
 * with the same host name and pid 1). Their messages, outbox parts and claims are free at once, so a restart takes
 * its predecessor's work over without waiting for its leases to run out. A process on another machine is only ever
 * taken over through its leases.
 */
export class ProcessRegistry {
  readonly #options: ProcessRegistryOptions;
  readonly #host: string;
  readonly #pid: number;
  readonly #now: () => number;

  constructor(options: ProcessRegistryOptions) {
    this.#options = options;
    this.#host = options.host ?? hostname();
    this.#pid = options.pid ?? process.pid;
    this.#now = options.now ?? Date.now;
  }

  /** Registers this process and retires the dead ones it replaces; returns how many messages they left. */
  async register(): Promise<number> {
    const { store, id, logger } = this.#options;
    const now = this.#now();
    await store.processes.register({ id, host: this.#host, pid: this.#pid, startedAt: now, heartbeatAt: now });
    runningHere.add(id);
    let left = 0;
    for (const other of await store.processes.list()) {
      if (other.id === id || other.host !== this.#host || this.#alive(other.id, other.pid)) continue;
      const messages = await store.processes.retire(other.id);
      left += messages;
      logger.info({ process: other.id, pid: other.pid, messages }, "taking over a stopped process's work on this machine at once");
    }
    await store.processes.forgetSilentSince(now - FORGET_AFTER_MS);
    return left;
  }

  /**
   * The heartbeat's part: stamps this process's record every round. Other processes read it to know this one runs:
   * its budget claims count while the stamp is within a lease (see `SpendRepository.reserve`).
   */
  async beat(): Promise<void> {
    const now = this.#now();
    await this.#options.store.processes.heartbeat(this.#options.id, now);
  }

  /** This process stops: another Palaver started in this Node process may retire what it leaves. */
  stopped(): void {
    runningHere.delete(this.#options.id);
  }

  /** Whether a process of this machine still runs: another Palaver of this Node process, or another Node process. */
  #alive(id: string, pid: number): boolean {
    return pid === this.#pid ? runningHere.has(id) : this.#isRunning(pid);
  }

  #isRunning(pid: number): boolean {
    if (this.#options.isRunning) return this.#options.isRunning(pid);
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      // EPERM: it runs, as another user.
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}
