/** The work both turn scenarios do: the same tool, the same instructions, the same user text. */
import { z } from 'zod';
import { defineTool } from '../src/tools/define-tool.js';

export const BASE_INSTRUCTIONS = 'You are a benchmark agent. Use the lookup tool to answer questions about items, then reply briefly.';

export const USER_TEXT = 'What is the status of item 1?';

/** Display messages of history each model call sees (Palaver's default `agent.historyLimit`). */
export const HISTORY_LIMIT = 20;

/**
 * The scripted model priced as a production agent prices its model (`model.prices`): every turn computes its cost in
 * decimal, and the 16 MB price table is not loaded for a model it cannot know.
 */
export const BENCH_PRICES = { scripted: { input: '0.40', output: '1.60' } };

export const lookupInput = z.object({ id: z.number().int().describe('Item id') });

export function lookupItem(id: number): { id: number; name: string; status: string; priceEur: number } {
  return { id, name: `item-${id}`, status: 'in stock', priceEur: 12.5 };
}

export const lookupTool = defineTool({
  name: 'lookup',
  description: 'Looks an item up by id.',
  input: lookupInput,
  // It only reads, as a team would declare it: its call is recorded with its result, in one write.
  readOnly: true,
  run: ({ id }) => lookupItem(id),
});

/** The model API both turn scenarios speak. */
export type TurnApi = 'chat' | 'responses';

/** Palaver's database in the turn scenarios. */
export type TurnBackend = 'sqlite' | 'postgres';

/** Parameters every turn scenario child receives from bench/run.ts. */
export interface TurnScenarioArgs {
  readonly baseUrl: string;
  readonly concurrency: number;
  readonly turns: number;
  readonly warmupTurns: number;
  readonly api: TurnApi;
  /** A worker's person is replaced by a new one after this many turns (first contact counts too). */
  readonly turnsPerPerson: number;
  /** Palaver's PostgreSQL database; a SQLite file in a temp folder without it. */
  readonly databaseUrl?: string;
  /** When set, the measured phase is CPU-profiled into this folder. */
  readonly profileDir?: string;
  /** The bare loop's SDK runs over Palaver's fetch (`--bare-transport`: undici's on an Agent), not the global fetch. */
  readonly palaverTransport?: boolean;
}

/**
 * Who a worker's next turn is from: each worker talks for a person who has `turnsPerPerson` turns, then the next
 * person takes over, so first contact (a new user and session) is part of the measured work on both sides.
 */
export function personRotation(prefix: string, turnsPerPerson: number): (worker: number) => string {
  const turnsByWorker = new Map<number, number>();
  return (worker) => {
    const done = turnsByWorker.get(worker) ?? 0;
    turnsByWorker.set(worker, done + 1);
    return `${prefix}-${worker}-${Math.floor(done / turnsPerPerson)}`;
  };
}
