/**
 * Conversation stages: what the person is doing right now (viewing their appointments, cancelling one, chatting),
 * found by rules before the model is called (or, when no rule matches, by a cheap classification call: see
 * stage-classifier.ts). Each stage may add its own scenario text to the prompt and may need
 * entities in focus (see focus.ts).
 */

/** One stage as configured. Rules are checked in order; the first stage whose rule matches wins. */
export interface StageDefinition {
  readonly id: string;
  /** Words or phrases in the person's message that select this stage (case-insensitive, whole words). */
  readonly keywords?: readonly string[];
  /** Selects this stage when the last tool called in the conversation is one of these. */
  readonly afterTools?: readonly string[];
  /** What the stage is about, for the classification call. */
  readonly description?: string;
  /** Added to the instructions while the conversation is in this stage. */
  readonly scenario?: string;
  /** Entity types this stage needs in focus (hidden context). */
  readonly needs?: readonly string[];
  /** A viewing stage answers an empty focus with a fixed reply instead of calling the model. */
  readonly viewing?: boolean;
}

/** What the stage rules look at. */
export interface StageSignals {
  readonly text: string;
  readonly lastToolCalled?: string;
}

export interface DetectedStage {
  readonly stage: StageDefinition;
  /** Which rule chose it, for logs and tests. */
  readonly by: 'keyword' | 'last_tool' | 'default' | 'classifier';
}

/**
 * Finds the current stage by rules: a keyword in the message first (what the person says now outweighs what
 * happened before), then the last tool called, then the default stage (the first one without rules, if any).
 *
 * @returns undefined when no rule matches and there is no default stage.
 */
export function detectStage(stages: readonly StageDefinition[], signals: StageSignals): DetectedStage | undefined {
  const words = normalise(signals.text);
  for (const stage of stages) {
    if (stage.keywords?.some((keyword) => containsPhrase(words, keyword))) return { stage, by: 'keyword' };
  }
  if (signals.lastToolCalled !== undefined) {
    const tool = signals.lastToolCalled;
    const stage = stages.find((candidate) => candidate.afterTools?.includes(tool));
    if (stage !== undefined) return { stage, by: 'last_tool' };
  }
  const fallback = stages.find((stage) => (stage.keywords?.length ?? 0) === 0 && (stage.afterTools?.length ?? 0) === 0);
  return fallback === undefined ? undefined : { stage: fallback, by: 'default' };
}

/** The stage's scenario appended to the agent's instructions, or the instructions unchanged. */
export function withScenario(instructions: string, stage: StageDefinition | undefined): string {
  const scenario = stage?.scenario?.trim();
  return scenario ? `${instructions}\n\n## Current stage: ${stage!.id}\n${scenario}` : instructions;
}

/** Lower-case words, letters and digits in any script, separated by single spaces and padded for whole-word search. */
function normalise(text: string): string {
  return ` ${text
    .toLocaleLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .join(' ')} `;
}

function containsPhrase(normalisedText: string, phrase: string): boolean {
  const needle = normalise(phrase);
  if (needle.trim() === '') return false;
  // Chinese and Japanese write no spaces between words: there a phrase is found anywhere in the text.
  return UNSPACED_SCRIPT.test(needle) ? normalisedText.includes(needle.trim()) : normalisedText.includes(needle);
}

const UNSPACED_SCRIPT = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;
