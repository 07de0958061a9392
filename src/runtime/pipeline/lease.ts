import type { TurnRequest } from '../turn-context.js';

/**
 * The lease this process holds its inbox messages and outbox parts under: who owns them, and how long they stay
 * its own without a renewal. Turn running stores under it; recovery renews it and takes over expired ones.
 */
export type ProcessLease = TurnRequest['lease'];

/** How long an accepted message stays leased without a renewal, unless `PipelineOptions.leaseMs` says otherwise. */
export const DEFAULT_LEASE_MS = 15_000;

/** Messages taken over per recovery round; the rest follow in the next rounds. */
export const RECOVERY_BATCH = 100;
