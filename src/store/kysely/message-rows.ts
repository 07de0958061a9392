import type { InsertObject, RawBuilder } from 'kysely';
import type { Database, MessageValues } from './schema.js';

// How message rows are inserted, shared by the repository and the dialects that insert them their own way
// (postgres/postgres-strategy.ts). Apart from message-repository.ts, so a dialect's strategy does not import the
// repositories (and, through their error handling, the dialect registry that lists the dialect itself).

// Rows per INSERT: 18 parameters each stays far below SQLite's 32766 and PostgreSQL's 65535 bound parameters.
export const ROWS_PER_INSERT = 500;

// Appends of up to this many rows run as prepared queries (one template per row count); longer ones are built anew.
export const PREPARED_MAX_ROWS = 16;

/** The row's columns one by one (a prepared query reads its rows field by field), `seq` possibly computed in SQL. */
export function columnsOf(row: MessageValues, seq: number | RawBuilder<number> = row.seq): InsertObject<Database, 'messages'> {
  return {
    id: row.id,
    session_id: row.session_id,
    seq,
    role: row.role,
    audience: row.audience,
    content: row.content,
    tool_calls: row.tool_calls,
    tool_call_id: row.tool_call_id,
    model: row.model,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cached_input_tokens: row.cached_input_tokens,
    token_estimate: row.token_estimate,
    cost: row.cost,
    currency: row.currency,
    correlation_id: row.correlation_id,
    meta: row.meta,
    created_at: row.created_at,
  };
}
