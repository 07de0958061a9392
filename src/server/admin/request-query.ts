import type { Context } from 'hono';
import type { z } from 'zod';
import { StoreError } from '../../domain/errors.js';
import { errorBody } from '../../platform/error-body.js';

/** The query string parsed by a contract schema, or the 400 answer that says which parameter is wrong and why. */
export function parseQuery<S extends z.ZodType>(
  c: Context,
  schema: S,
): { readonly ok: true; readonly value: z.output<S> } | { readonly ok: false; readonly response: Response } {
  const parsed = schema.safeParse(c.req.query());
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'query'}: ${issue.message}`);
  return { ok: false, response: c.json(errorBody('invalid_request', `Invalid query: ${problems.join('; ')}.`), 400) };
}

/** A cursor the store did not hand out is the client's mistake (400); any other failure is the server's. */
export function cursorRefusal(c: Context, error: unknown): Response {
  if (error instanceof StoreError && error.code === 'invalid_cursor') return c.json(errorBody('invalid_request', error.message), 400);
  throw error;
}
