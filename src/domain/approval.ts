/**
 * Tool calls a person approves first. A tool declares who decides (`approval`), a call of it waits for that decision
 * in its turn's journal, and the first decision taken wins (one guarded store update, across processes).
 */

/** Who decides: the person the turn answers (in a group, the sender), or an operator. */
export type ApprovalDecider = 'person' | 'operator';

/** Where a request stands; every status but `pending` is final. */
export type ApprovalStatus = 'pending' | 'approved' | 'declined' | 'expired';

/** A decision someone can take. */
export type ApprovalDecision = 'approved' | 'declined';

/** What a tool asks for one call: who decides, and what they are shown. */
export interface ApprovalRequirement {
  readonly by: ApprovalDecider;
  /** What will happen, in plain words: the tool's `describe`, or its label and its arguments, quoted. */
  readonly summary: string;
}

/** A request for approval, as stored. */
export interface ToolApproval {
  readonly id: string;
  readonly turnId: string;
  /** The model's call id within the turn. */
  readonly callId: string;
  readonly sessionId: string;
  /** The person the turn answers: the only one who may decide a `person` request. */
  readonly userId: string;
  readonly channel: string;
  readonly conversationId: string;
  readonly accountId: string;
  readonly accountNamespace: string;
  readonly conversationKind: 'direct' | 'shared';
  readonly tool: string;
  /** The call's arguments (JSON text), as the model gave them. */
  readonly arguments: string;
  readonly summary: string;
  readonly by: ApprovalDecider;
  /** The person's interface language when they were asked. */
  readonly language: string;
  readonly status: ApprovalStatus;
  readonly requestedAt: Date;
  readonly expiresAt: Date;
  /** Whether an unclear answer in words was already met by asking again (the next unclear one declines). */
  readonly askedAgain: boolean;
  /** The turn's model calls billed when it stopped to ask (its resumption bills only the calls after them). */
  readonly modelCalls: number;
  readonly decidedAt: Date | null;
  /** Who decided: `person:<channel>:<account id>`, an operator account's name (or `admin`), or `expiry`. */
  readonly decidedBy: string | null;
  readonly reason: string | null;
}

/** The question part of a reply, as a channel gets it to show buttons for it. */
export interface DeliveryApproval {
  readonly id: string;
  readonly expiresAt: string;
}

/** The most characters of a summary shown to the person (a tool's `describe` is cut there). */
export const MAX_APPROVAL_SUMMARY_CHARS = 600;
