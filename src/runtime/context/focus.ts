/**
 * Entities in focus: a short-term memory, per person in a conversation, of what they are talking about (their upcoming
 * appointments, with ids and human descriptions). Per person, not per conversation: in a group each member has
 * their own, so one member's turn never sees another's entities nor passes the id check with their ids. It is given to the model as a hidden block that is never stored
 * as a display message nor streamed, and Palaver checks tool arguments declared as ids of a focused type against it,
 * so "cancel the haircut" can only cancel one of the person's own appointments.
 */
import { z } from 'zod';
import type { ModelToolCall } from '../../domain/ports/model-provider.js';
import type { FocusOwner, FocusRecord, FocusRepository } from '../../domain/ports/store.js';
import { quoteForPrompt } from '../../domain/prompt-text.js';
import type { ToolResult } from '../flows/agent-loop.js';

/** The longest description an entity may have (the loading tool's output is refused beyond it). */
const MAX_DESCRIPTION_CHARS = 500;

/** One entity as the loading tool describes it. */
export const focusEntitySchema = z.strictObject({
  id: z.union([z.number().int(), z.string().min(1)]),
  description: z.string().min(1).max(MAX_DESCRIPTION_CHARS),
});
export type FocusEntity = z.infer<typeof focusEntitySchema>;

/** What is in focus for one entity type of one person in one conversation, and when it was loaded. */
export type FocusSnapshot = FocusRecord;

/** Where focus is kept so that it survives a restart (the store's `focus` repository); keyed by session and user. */
export type FocusStore = FocusRepository;

/** How one entity type is kept in focus. */
export interface FocusEntityType {
  readonly type: string;
  /** The tool that loads the person's entities of this type; its output is a JSON array of {@link FocusEntity}. */
  readonly loadTool: string;
  readonly ttlMs: number;
  /** Tools that change these entities: after one of them succeeds, the focus is loaded again. */
  readonly refreshAfter: readonly string[];
  /** Tool arguments that must hold an id of this type: tool name → argument names. */
  readonly idArguments: Readonly<Record<string, readonly string[]>>;
}

/** Runs the loading tool for the bound user; its output is parsed here. */
export type FocusLoader = (loadTool: string) => Promise<ToolResult>;

export class FocusError extends Error {
  override readonly name = 'FocusError';
}

/** Keeps the focus of each configured entity type fresh, renders the hidden block and checks tool arguments. */
export class FocusKeeper {
  readonly #types: readonly FocusEntityType[];
  readonly #store: FocusStore;
  readonly #now: () => number;

  constructor(types: readonly FocusEntityType[], store: FocusStore, now: () => number = Date.now) {
    this.#types = types;
    this.#store = store;
    this.#now = now;
  }

  /**
   * The focus of each needed type: the stored one while younger than its TTL, otherwise loaded with its tool and
   * stored.
   *
   * @throws FocusError when the loading tool fails or returns something other than a list of entities.
   */
  async load(owner: FocusOwner, needs: readonly string[], runLoader: FocusLoader): Promise<FocusSnapshot[]> {
    const snapshots: FocusSnapshot[] = [];
    for (const entityType of needs) {
      const type = this.#type(entityType);
      const stored = await this.#store.get(owner, entityType);
      if (stored !== undefined && this.#now() - stored.loadedAt < type.ttlMs) {
        snapshots.push(stored);
        continue;
      }
      const result = await runLoader(type.loadTool);
      if (result.isError) throw new FocusError(`Loading ${entityType} with ${type.loadTool} failed: ${result.content}`);
      const snapshot: FocusSnapshot = { entityType, entities: parseEntities(type, result.content), loadedAt: this.#now() };
      await this.#store.save(owner, snapshot);
      snapshots.push(snapshot);
    }
    return snapshots;
  }

  /** After a tool succeeded: forgets every type it changes, so that the next turn loads it again. */
  async afterTool(owner: FocusOwner, toolName: string): Promise<void> {
    for (const type of this.#types) {
      if (type.refreshAfter.includes(toolName)) await this.#store.clear(owner, type.type);
    }
  }

  /**
   * The refusal the model sees when a call passes an id of a focused type that is not in focus; undefined when the
   * call is fine (or declares no such argument). A type with no snapshot loaded this turn refuses every id; one whose
   * loading failed (`unavailable`) says so, so that the model tells the person to try again rather than guess.
   */
  check(call: ModelToolCall, focus: readonly FocusSnapshot[], unavailable: readonly string[] = []): ToolResult | undefined {
    let args: unknown;
    try {
      args = JSON.parse(call.arguments);
    } catch {
      return undefined; // the tools layer answers malformed arguments itself
    }
    if (typeof args !== 'object' || args === null) return undefined;
    for (const type of this.#types) {
      for (const argument of type.idArguments[call.name] ?? []) {
        const value = (args as Record<string, unknown>)[argument];
        if (value === undefined) continue;
        if (unavailable.includes(type.type)) {
          return {
            content: `Refused: the person's ${type.type} could not be loaded just now, so ${argument}=${JSON.stringify(value)} cannot be checked. Tell the person it cannot be done at the moment; do not guess ids.`,
            isError: true,
          };
        }
        const ids = focus.find((snapshot) => snapshot.entityType === type.type)?.entities.map((entity) => String(entity.id)) ?? [];
        if (!ids.includes(String(value))) {
          const known = ids.length === 0 ? 'none' : ids.join(', ');
          return {
            content: `Refused: ${argument}=${JSON.stringify(value)} is not the id of one of the person's ${type.type} in focus (ids in focus: ${known}). Take ids only from the hidden context block; do not guess them.`,
            isError: true,
          };
        }
      }
    }
    return undefined;
  }

  #type(entityType: string): FocusEntityType {
    const type = this.#types.find((candidate) => candidate.type === entityType);
    if (type === undefined) throw new FocusError(`No entity type "${entityType}" is configured for focus.`);
    return type;
  }
}

/**
 * The hidden block added to the instructions: the entities with their ids, and the rule that tool arguments take
 * ids from it. A type whose loading failed (`unavailable`) is named as such, so the model neither says the person has
 * none nor invents ids. Never part of a stored or streamed message.
 */
export function hiddenFocusBlock(focus: readonly FocusSnapshot[], unavailable: readonly string[] = []): string {
  if (focus.length === 0 && unavailable.length === 0) return '';
  const sections = focus.map((snapshot) => {
    // Descriptions are tool output and may carry what a person typed (a note on a booking): quoted, as data.
    const lines = snapshot.entities.map((entity) => `- id ${JSON.stringify(entity.id)}: ${quoteForPrompt(entity.description, MAX_DESCRIPTION_CHARS)}`);
    return `### ${snapshot.entityType}\n${lines.length === 0 ? '(none)' : lines.join('\n')}`;
  });
  for (const entityType of unavailable) {
    sections.push(
      `### ${entityType}\n(could not be loaded just now: do not say the person has none, and do not act on one; say it cannot be seen at the moment)`,
    );
  }
  return [
    '## Hidden context (entities in focus; never show ids to the person)',
    'When a tool argument is the id of one of these entities, take the id from this list. Never ask the person for an id and never invent one.',
    ...sections,
  ].join('\n');
}

/** True when a viewing stage has nothing to show: every needed type is loaded and empty. */
export function focusIsEmpty(focus: readonly FocusSnapshot[]): boolean {
  return focus.length > 0 && focus.every((snapshot) => snapshot.entities.length === 0);
}

function parseEntities(type: FocusEntityType, content: string): FocusEntity[] {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch {
    throw new FocusError(`${type.loadTool} must return a JSON array of {id, description} for ${type.type}; it returned text that is not JSON.`);
  }
  const parsed = z.array(focusEntitySchema).safeParse(json);
  if (!parsed.success) throw new FocusError(`${type.loadTool} must return a JSON array of {id, description} for ${type.type}: ${parsed.error.message}`);
  return parsed.data;
}

/** Focus kept in memory only: for tests and for a Palaver without a store. */
export class MemoryFocusStore implements FocusStore {
  readonly #snapshots = new Map<string, FocusSnapshot>();

  async get(owner: FocusOwner, entityType: string): Promise<FocusSnapshot | undefined> {
    return this.#snapshots.get(key(owner, entityType));
  }

  async save(owner: FocusOwner, snapshot: FocusSnapshot): Promise<void> {
    this.#snapshots.set(key(owner, snapshot.entityType), snapshot);
  }

  async clear(owner: FocusOwner, entityType: string): Promise<void> {
    this.#snapshots.delete(key(owner, entityType));
  }
}

function key(owner: FocusOwner, entityType: string): string {
  return `${owner.sessionId}\u0000${owner.userId}\u0000${entityType}`;
}
