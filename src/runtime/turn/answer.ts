import type { DeliveryApproval } from '../../domain/approval.js';
import type { TurnOutcome } from '../../domain/ports/channel.js';
import type { DeliveryRecord } from '../../domain/ports/store.js';
import type { ReplyStep } from '../../domain/reply-actions.js';

// What persisting a turn hands to delivering it: persistence makes an Answer, delivery sends it.

/** The stored reply of a turn, ready to send. */
export interface Answer {
  readonly outcome: TurnOutcome;
  readonly parts: readonly string[];
  /** The parts' outbox records, for a channel that delivers offline: each is marked sent as the channel takes it. */
  readonly deliveries?: readonly DeliveryRecord[] | undefined;
  /** Replies as actions: the stored plan, carried out step by step in place of sending `parts`. */
  readonly plan?: PlanToRun;
  /** The reply asks the person to approve a tool call: its last part carries the request (`SendOptions.approval`). */
  readonly approval?: DeliveryApproval;
}

/** A stored reply plan, ready to carry out. */
export interface PlanToRun {
  readonly steps: readonly ReplyStep[];
  /** The stored display message of each send step, in order. */
  readonly displayIds: readonly string[];
  /** The outbox records of the sends and reactions, in plan order (a channel that delivers offline). */
  readonly deliveries: readonly DeliveryRecord[] | undefined;
}
