import { z } from 'zod';
import type { JsonSchema } from '../domain/ports/model-provider.js';
import type { ApprovalDecider } from '../domain/approval.js';
import type { ApprovalContext, ToolCallContext, ToolLabel } from '../domain/ports/tool-host.js';

/**
 * A tool that runs in-process. Its arguments are validated with `input` before `run` is called, and the
 * model sees the JSON Schema generated from it.
 */
export interface LocalTool<Input extends z.ZodType = z.ZodType> {
  readonly name: string;
  readonly description: string;
  readonly input: Input;
  /**
   * Runs the tool for `ctx.userId` — the user the server bound to the turn. Return text, or any JSON value
   * (sent to the model as JSON). Throw to report a failure; the model receives the message as a tool error.
   */
  run(args: z.infer<Input>, ctx: ToolCallContext): Promise<unknown> | unknown;
  /**
   * Arguments that hold the id of an entity in focus: argument name → entity type (`focus.entities[].type`).
   * Palaver refuses a call whose id is not in the conversation's focus, before `run`.
   */
  readonly focusIds?: Readonly<Record<string, string>>;
  /**
   * What people see while the tool runs, e.g. "Checking the calendar…", or one text per language
   * (`{ en: 'Checking the calendar…', ru: 'Смотрю календарь…' }`). Without one they see a generic "Working on it…".
   */
  readonly label?: ToolLabel;
  /**
   * The tool only reads: running it twice changes nothing. Its calls are not recorded before they run, only with
   * their result, which saves the turn a database write per call; a crash while one runs simply asks the model again.
   * Leave it unset for a tool that changes anything (even idempotently): the model asked again may ask differently.
   */
  readonly readOnly?: boolean;
  /**
   * Someone says yes before a call runs: `person` (the person the turn answers, asked in the chat with buttons or in
   * words), `operator` (the team, in the dashboard or `palaver admin approvals`), or a function of the call's
   * validated arguments that picks one or returns undefined (no approval needed: a small refund, say). The model
   * cannot skip it; the call waits in its turn, and runs exactly once when approved. See docs/approvals.md.
   */
  readonly approval?: ApprovalDecider | ApprovalRule<z.infer<Input>>;
  /**
   * What a call will do, in plain words, shown to whoever approves it, e.g. `Cancel your appointment on 12 May at
   * 10:00`. Default: the tool's label (or name) and its arguments. The model's own words are never the only
   * description.
   */
  describe?(input: z.infer<Input>): string;
}

/** Picks who approves a call from its arguments (a method's type: a tool of any input fits a list of tools). */
type ApprovalRule<Input> = { rule(input: Input, ctx: ApprovalContext): ApprovalDecider | undefined }['rule'];

/**
 * Declares a local tool.
 * @example
 * const saveNote = defineTool({
 *   name: 'save_note',
 *   description: 'Saves a note for the user',
 *   input: z.object({ text: z.string().min(1) }),
 *   run: ({ text }, ctx) => notes.add(ctx.userId, text),
 * });
 */
export function defineTool<Input extends z.ZodType>(tool: LocalTool<Input>): LocalTool<Input> {
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.name)) {
    throw new TypeError(`Tool name "${tool.name}" must be 1-64 letters, digits, _ or - (an OpenAI function-name rule)`);
  }
  return tool;
}

/** JSON Schema for a tool's arguments, in the subset function-calling APIs accept. */
export function toolParameters(input: z.ZodType): JsonSchema {
  const schema = z.toJSONSchema(input, { target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;
  delete schema.$schema;
  return schema;
}
