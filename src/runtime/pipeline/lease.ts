import type { TurnRequest } from '../turn/turn-context.js';

/**
 * The lease this process holds its inbox messages and outbox parts under: who owns them, and how long they stay
 * its own without a renewal. Turn running stores under it; recovery renews it and takes over expired ones.
 */
export type ProcessLease = TurnRequest['lease'];

/**
 * How long an accepted message (and a conversation claim) stays leased without a renewal, unless
 * `PipelineOptions.leaseMs` says otherwise: a stopped process's work is taken over this long after its last heartbeat.
 */
export const DEFAULT_LEASE_MS = 2_000;

/** How often a process renews its leases and looks for a stopped process's work, unless `PipelineOptions.heartbeatMs` says otherwise. */
export const DEFAULT_HEARTBEAT_MS = 500;

/** Messages taken over per recovery round; the rest follow in the next rounds. */
export const RECOVERY_BATCH = 100;
