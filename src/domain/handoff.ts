// A conversation handed to a person: what the turn opens, operators take, and the store keeps (see HandoffRepository).

/** What asked for a person: the model (the `handoff` tool), a tool (`ctx.handoff`), or the person's own words. */
export type HandoffSource = 'model' | 'tool' | 'phrase';

/** A conversation handed to a person: open until an operator takes it or it is closed (resumed, ended). */
export interface Handoff {
  readonly id: string;
  readonly sessionId: string;
  readonly userId: string;
  /** Why, in the words of whoever asked (the model's, a tool's, or the phrase that matched). */
  readonly reason: string;
  readonly source: HandoffSource;
  readonly requestedAt: Date;
  readonly takenBy: string | null;
  readonly takenAt: Date | null;
  readonly closedAt: Date | null;
  readonly closedBy: string | null;
  /** Notice rounds sent to operators so far. */
  readonly notices: number;
  /** When the next round is due; null when nobody is to be told again. */
  readonly nextNoticeAt: Date | null;
}

export interface NewHandoff {
  readonly sessionId: string;
  readonly userId: string;
  readonly reason: string;
  readonly source: HandoffSource;
  /** Epoch ms: when it was asked for, and when its first notice is due. */
  readonly at: number;
}
