import { readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { ConfigError } from '../../domain/errors.js';
import { quoteForPrompt } from '../../domain/prompt-text.js';
import type { UserState } from './user-state.js';

/** How much of an earlier tool call's arguments the service data repeats. */
const MAX_ARGUMENTS_CHARS = 300;

/**
 * Files that are always part of the instructions, in this order; every other `*.md` is a role. `system` and `shared`
 * are the names a seed-000 project gives its system text and its shared rules: never roles.
 */
const BASE_FILES = ['system', 'base', 'default', 'common', 'shared'] as const;

/** Instruction texts read once from a folder: base files and one file per role. */
export interface InstructionLibrary {
  readonly base: string;
  readonly roles: ReadonlyMap<string, string>;
}

/**
 * Reads `dir` once at start-up (not per turn: the texts are on every turn's path).
 * @throws ConfigError when the folder is missing or has neither a base file nor a role file.
 */
export function loadInstructionLibrary(dir: string): InstructionLibrary {
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => extname(name) === '.md');
  } catch (error) {
    throw new ConfigError(
      `Instructions folder ${dir} cannot be read; set agent.instructionsDir`,
      [{ path: 'agent.instructionsDir', message: 'not readable' }],
      { cause: error },
    );
  }
  const texts = new Map(names.map((name) => [basename(name, '.md'), readFileSync(join(dir, name), 'utf8').trim()]));
  const base = BASE_FILES.flatMap((name) => (texts.has(name) ? [texts.get(name)!] : [])).join('\n\n');
  const roles = new Map([...texts].filter(([name]) => !(BASE_FILES as readonly string[]).includes(name)));
  if (!base && roles.size === 0) {
    throw new ConfigError(`Instructions folder ${dir} has no base.md and no role files`, [{ path: 'agent.instructionsDir', message: 'empty' }]);
  }
  return { base, roles };
}

/** What changes with the clock: the person's current date and time. */
export interface RuntimeFacts {
  readonly now: Date;
  readonly timeZone: string;
}

/**
 * Composes the instructions of one model call: the person's section first (every flow's instructions start with
 * who they talk to and in which language and zone), then base, role, runtime facts and internal service data.
 * The service-data block is for the model only; the person never sees it.
 */
export function composeInstructions(library: InstructionLibrary, role: string | null, facts: RuntimeFacts, state: UserState, userSection = ''): string {
  const parts = [userSection, library.base];
  const roleText = role ? library.roles.get(role) : undefined;
  if (roleText) parts.push(roleText);
  parts.push(renderRuntimeFacts(facts));
  const serviceData = renderServiceData(role, state);
  if (serviceData) parts.push(serviceData);
  return parts.filter(Boolean).join('\n\n');
}

/** One formatter per zone: building an Intl.DateTimeFormat costs ~30x formatting with one. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function localTimeFormatter(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      weekday: 'long',
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZoneName: 'longOffset',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** The last facts rendered per zone: the text changes once a minute. */
const renderedFacts = new Map<string, { readonly minute: number; readonly text: string }>();
const MAX_RENDERED_FACTS = 1024;

export function renderRuntimeFacts(facts: RuntimeFacts): string {
  const minute = Math.floor(facts.now.getTime() / 60_000);
  const key = facts.timeZone;
  const cached = renderedFacts.get(key);
  if (cached?.minute === minute) return cached.text;
  const text = formatRuntimeFacts(facts);
  if (renderedFacts.size >= MAX_RENDERED_FACTS) renderedFacts.clear();
  renderedFacts.set(key, { minute, text });
  return text;
}

function formatRuntimeFacts(facts: RuntimeFacts): string {
  const local = localTimeFormatter(facts.timeZone).format(facts.now);
  return ['## Runtime facts', `- Current date and time for the person: ${local} (${facts.timeZone})`].join('\n');
}

function renderServiceData(role: string | null, state: UserState): string {
  const lines: string[] = [];
  if (role) lines.push(`- role: ${role}`);
  // Arguments are model output the person can steer: quoted, so they cannot open a section of their own.
  for (const call of state.recentToolCalls)
    lines.push(`- earlier tool call: ${call.name}(${quoteForPrompt(call.arguments, MAX_ARGUMENTS_CHARS)}) ${call.ok ? 'ok' : 'failed'} at ${call.at}`);
  for (const [namespace, value] of Object.entries(state.flows)) lines.push(`- flow ${namespace}: ${JSON.stringify(value)}`);
  if (lines.length === 0) return '';
  return ['## Service data (internal: use it, never show or mention it to the person)', ...lines].join('\n');
}
