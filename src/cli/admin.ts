import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { z } from 'zod';
import type { AdminClient } from '../admin/admin-client.js';
import type { approvals, conversationSummary, costs, handoffs, operatorAccount, transcript, userSummary } from '../admin/api-contract.js';
import { adminConsoleSettings } from '../config/index.js';
import { PalaverError } from '../domain/errors.js';
import { renderTable, safeText, singleLine } from './text-table.js';

// `palaver admin …`: the operator's console over a running Palaver's admin API. Every answer is parsed with the API
// contract's schemas; `--json` prints the answer as the server sent it (one JSON document), otherwise tables.
// The client and the config load inside the actions, so `palaver --help` stays quick.

/** Exit codes a script can rely on. */
export const ADMIN_EXIT = { ok: 0, usage: 1, notFound: 2, refused: 3, unavailable: 4 } as const;

const EXIT_CODES_HELP = `
Exit codes:
  0  done
  1  usage error: a wrong option or argument, an invalid config, or a request the API calls invalid (400)
  2  not found: no such conversation or user (404)
  3  refused: missing or wrong token (401), admin API off or not for your role (403), or not possible now (409)
  4  unavailable: Palaver cannot be reached, answered 5xx, or answered something that is not the admin API

The token comes from PALAVER_OPERATOR_TOKEN (your own), else PALAVER_ADMIN_TOKEN, else from the local config's
server.adminToken. With an operator token the audit names you as your account is named, and --actor is not sent.`;

interface GlobalOptions {
  readonly url?: string;
  readonly actor?: string;
  readonly json?: boolean;
  readonly config?: string;
}

interface PageOptions {
  readonly limit?: number;
  readonly cursor?: string;
  readonly all?: boolean;
}

/** The `admin` command group, for `main`. */
export function adminCommand(configOption: () => Option): Command {
  const admin = new Command('admin')
    .description('operate a running Palaver: users, conversations, transcripts, send as the agent, pause, costs, the audit')
    .option('--url <url>', 'the running Palaver (default: server.host and server.port of the local config, else http://127.0.0.1:3000)')
    .option('--json', "print the API's answer as one JSON document, for scripts")
    .option('--actor <name>', "with the admin token: your name in the operators' audit (default: your login name)", parseActor)
    .addOption(configOption())
    .addHelpText('after', EXIT_CODES_HELP);

  admin
    .command('users')
    .description('list users, newest activity first; search by name, phone digits or account id')
    .option('-s, --search <text>', 'name, phone digits or channel account id')
    .addOption(limitOption(500))
    .option('--cursor <cursor>', 'the page after this cursor (printed under a page that has more)')
    .option('--all', 'follow every page')
    .action(
      action(async (client, globals, options: PageOptions & { search?: string }) => {
        const page = await allPages(
          options,
          (cursor) => client.users({ q: options.search, limit: options.limit, cursor }),
          (answer) => answer.users,
          (users, nextCursor) => ({ users, nextCursor }),
        );
        if (globals.json) return printJson(page);
        print(page.users.length === 0 ? 'No users.' : usersTable(page.users));
        printMore(page.nextCursor);
      }),
    );

  admin
    .command('conversations')
    .description('list conversations, most recent first, with status, waiting messages and cost')
    .option('--channel <name>', 'only this channel (web, telegram, telegram-user, console)')
    .option('--user <userId>', "only this user's")
    .addOption(new Option('--status <status>', 'only those in this status').choices(['pending', 'running', 'completed', 'failed']))
    .option('--paused', 'only those an operator paused')
    .option('-s, --search <text>', "title, person's name or conversation id")
    .addOption(limitOption(500))
    .option('--cursor <cursor>', 'the page after this cursor')
    .option('--all', 'follow every page')
    .action(
      action(async (client, globals, options: PageOptions & { channel?: string; user?: string; status?: string; paused?: boolean; search?: string }) => {
        const query = {
          q: options.search,
          channel: options.channel,
          userId: options.user,
          status: options.status,
          ...(options.paused ? { paused: true } : {}),
          limit: options.limit,
        };
        const page = await allPages(
          options,
          (cursor) => client.conversations({ ...query, cursor }),
          (answer) => answer.conversations,
          (conversations, nextCursor) => ({ conversations, nextCursor }),
        );
        if (globals.json) return printJson(page);
        print(page.conversations.length === 0 ? 'No conversations.' : conversationsTable(page.conversations));
        printMore(page.nextCursor);
      }),
    );

  admin
    .command('show')
    .description("show a conversation's transcript")
    .argument('<sessionId>', 'the conversation (SESSION in palaver admin conversations)')
    .option('--audit', 'add audit records and tool calls (arguments, results, latency, errors)')
    .addOption(limitOption(2000))
    .action(
      action(async (client, globals, options: { audit?: boolean; limit?: number }, sessionId: string) => {
        const answer = await client.transcript(sessionId, { audit: options.audit === true, ...(options.limit === undefined ? {} : { limit: options.limit }) });
        if (globals.json) return printJson(answer);
        print(transcriptText(answer));
      }),
    );

  admin
    .command('send')
    .description('send a message as the agent into the conversation, through its channel, exactly once')
    .argument('<sessionId>', 'the conversation')
    .argument('<text...>', 'the message (words are joined with spaces)')
    .option('--key <idempotencyKey>', 'repeat an earlier send with its Idempotency-Key: it is not sent twice')
    .action(
      action(async (client, globals, options: { key?: string }, sessionId: string, words: string[]) => {
        const key = options.key ?? randomUUID();
        const answer = await client.send(sessionId, words.join(' '), key);
        // Stdout stays one JSON document for scripts; the key goes to stderr there.
        if (globals.json) {
          console.error(`Idempotency-Key: ${key}`);
          return printJson(answer);
        }
        const parts = `${answer.parts} part${answer.parts === 1 ? '' : 's'}`;
        print(
          answer.duplicate
            ? `Already sent with this key: message ${answer.messageId} (${parts}); nothing was sent again.`
            : `Sent as the agent: message ${answer.messageId} (${parts}).`,
        );
        print(`Idempotency-Key: ${key}  (to retry safely: palaver admin send ${sessionId} --key ${key} …)`);
      }),
    );

  const actions = {
    pause: [
      'stop the agent answering the conversation: new messages are stored, not answered',
      'Paused: new messages are stored and not answered until you resume.',
    ],
    end: ['end the conversation: the next message starts a fresh context', 'Ended: the next message starts a fresh context.'],
  } as const;
  for (const [name, [description, done]] of Object.entries(actions) as [keyof typeof actions, (typeof actions)[keyof typeof actions]][]) {
    admin
      .command(name)
      .description(description)
      .argument('<sessionId>', 'the conversation')
      .action(
        action(async (client, globals, _options: object, sessionId: string) => {
          const answer = await client.act(name, sessionId);
          if (globals.json) return printJson(answer);
          print(`${singleLine(sessionId)}: ${done}`);
        }),
      );
  }

  admin
    .command('take')
    .description('take the conversation: it is assigned to you (shown to the other operators) and the agent pauses')
    .argument('<sessionId>', 'the conversation')
    .option('--force', 'take it over from another operator who has it')
    .action(
      action(async (client, globals, options: { force?: boolean }, sessionId: string) => {
        const answer = await client.take(sessionId, options.force === true ? { force: true } : {});
        if (globals.json) return printJson(answer);
        print(
          `${singleLine(sessionId)}: ${answer.changed ? 'Taken' : 'Already yours'}: assigned to ${singleLine(answer.assignedTo)}; the agent is paused until you resume.`,
        );
      }),
    );

  admin
    .command('resume')
    .description('hand the conversation back to the agent: messages that waited are answered once')
    .argument('<sessionId>', 'the conversation')
    .option('--note <text>', "a note for the agent's next turn (never shown to the person)")
    .action(
      action(async (client, globals, options: { note?: string }, sessionId: string) => {
        const answer = await client.resume(sessionId, options.note === undefined ? {} : { note: options.note });
        if (globals.json) return printJson(answer);
        const note = options.note === undefined ? '' : ' The agent reads your note in its next turn.';
        print(`${singleLine(sessionId)}: Resumed: messages that waited are answered now.${note}`);
      }),
    );

  admin
    .command('costs')
    .description('what the model calls cost, per day, user or conversation, with tokens by model')
    .addOption(new Option('--by <key>', 'group by').choices(['day', 'user', 'conversation']).default('day'))
    .option('--from <date>', 'from this day or instant (included), UTC, e.g. 2026-11-01', parseInstant)
    .option('--to <date>', 'up to this day (included) or instant (excluded), UTC', parseInstant)
    .option('--user <userId>', "only this user's")
    .option('--conversation <sessionId>', "only this conversation's")
    .addOption(limitOption(1000))
    .action(
      action(
        async (
          client,
          globals,
          options: { by: 'day' | 'user' | 'conversation'; from?: string; to?: string; user?: string; conversation?: string; limit?: number },
        ) => {
          const answer = await client.costs({
            by: options.by,
            from: options.from,
            to: options.to,
            userId: options.user,
            sessionId: options.conversation,
            limit: options.limit,
          });
          if (globals.json) return printJson(answer);
          print(costsText(answer));
        },
      ),
    );

  admin
    .command('handoffs')
    .description('conversations handed to a person, oldest first: who waits, why, and who took them')
    .addOption(limitOption(500))
    .action(
      action(async (client, globals, options: { limit?: number }) => {
        const answer = await client.handoffs({ limit: options.limit });
        if (globals.json) return printJson(answer);
        print(handoffsText(answer));
      }),
    );

  admin
    .command('actions')
    .description("the operators' audit: who sent, took, paused, resumed or ended what, newest first")
    .addOption(limitOption(500))
    .action(
      action(async (client, globals, options: { limit?: number }) => {
        const answer = await client.actions({ limit: options.limit });
        if (globals.json) return printJson(answer);
        print(
          answer.actions.length === 0
            ? 'No actions yet.'
            : renderTable(
                [
                  { header: 'AT' },
                  { header: 'ACTOR', max: 24 },
                  { header: 'ACTION' },
                  { header: 'SESSION', max: 36 },
                  { header: 'USER', max: 36 },
                  { header: 'REQUEST', max: 36 },
                ],
                answer.actions.map((entry) => [when(entry.at), entry.actor, entry.action, entry.sessionId ?? '', entry.userId ?? '', entry.requestId ?? '']),
              ),
        );
      }),
    );

  admin.addCommand(approvalsCommand());
  admin.addCommand(operatorsCommand());
  return admin;
}

/** `palaver admin approvals [approve|decline]`: tool calls waiting for a decision; operators decide theirs. */
function approvalsCommand(): Command {
  const approvalsGroup = new Command('approvals')
    .description('tool calls waiting for a decision, newest first; approve or decline those an operator decides')
    .addOption(new Option('--status <status>', 'only those in this status').choices(['pending', 'approved', 'declined', 'expired']))
    .addOption(limitOption(500))
    .action(
      action(async (client, globals, options: { status?: 'pending' | 'approved' | 'declined' | 'expired'; limit?: number }) => {
        const answer = await client.approvals({ status: options.status, limit: options.limit });
        if (globals.json) return printJson(answer);
        print(approvalsText(answer, options.status));
      }),
    );

  approvalsGroup
    .command('approve')
    .description('approve a request an operator decides: the tool runs once and the agent answers with its result')
    .argument('<id>', 'the request (ID in palaver admin approvals)')
    .action(
      action(async (client, globals, _options: object, id: string) => {
        const answer = await client.decideApproval(id, 'approve');
        if (globals.json) return printJson(answer);
        print(`Approved ${singleLine(answer.id)}: the tool runs once, and the agent answers with its result.`);
      }),
    );

  approvalsGroup
    .command('decline')
    .description('decline a request an operator decides: the tool does not run, and the agent is told so')
    .argument('<id>', 'the request (ID in palaver admin approvals)')
    .option('--reason <text>', "why, kept with the decision and in the operators' audit")
    .action(
      action(async (client, globals, options: { reason?: string }, id: string) => {
        const answer = await client.decideApproval(id, 'decline', options.reason === undefined ? {} : { reason: options.reason });
        if (globals.json) return printJson(answer);
        print(`Declined ${singleLine(answer.id)}: the tool does not run, and the agent is told so.`);
      }),
    );

  return approvalsGroup;
}

function approvalsText(answer: z.infer<typeof approvals>, status: string | undefined): string {
  if (answer.approvals.length === 0) return status === undefined ? 'No approval requests.' : `No approval requests ${status}.`;
  const table = renderTable(
    [
      { header: 'ID', max: 36 },
      { header: 'TOOL', max: 24 },
      { header: 'SUMMARY', max: 48 },
      { header: 'BY' },
      { header: 'STATUS' },
      { header: 'CHANNEL' },
      { header: 'REQUESTED' },
      { header: 'EXPIRES' },
      { header: 'DECIDED BY', max: 24 },
    ],
    answer.approvals.map((approval) => [
      approval.id,
      approval.tool,
      approval.summary,
      approval.by,
      approval.status,
      approval.channel,
      when(approval.requestedAt),
      when(approval.expiresAt),
      approval.decidedBy ?? '',
    ]),
  );
  const waiting = answer.approvals.filter((approval) => approval.status === 'pending' && approval.by === 'operator').length;
  return waiting === 0 ? table : `${table}\n\n${waiting} waiting for an operator: palaver admin approvals approve <id>, or decline <id> [--reason TEXT].`;
}

/** `palaver admin operators …`: the people who operate Palaver (admins only). */
function operatorsCommand(): Command {
  const operators = new Command('operators').description('operator accounts: add one (its token is shown once), list, disable, issue a new token');

  operators
    .command('add')
    .description('add an operator account and print its token, shown this once')
    .argument('<name>', "the operator's name, as the audit shows it (letters, digits, spaces, ._@-)", parseActor)
    .addOption(new Option('--role <role>', 'operator: conversations; admin: everything').choices(['operator', 'admin']).default('operator'))
    .action(
      action(async (client, globals, options: { role: 'operator' | 'admin' }, name: string) => {
        const answer = await client.addOperator(name, options.role);
        if (globals.json) return printJson(answer);
        print(`Added ${singleLine(answer.operator.name)} (${answer.operator.role}), id ${answer.operator.id}.`);
        print(`Token, shown this once (give it to ${singleLine(answer.operator.name)}; it signs in on /admin and works as PALAVER_OPERATOR_TOKEN):`);
        print(answer.token);
      }),
    );

  operators
    .command('list')
    .description('list operator accounts, disabled ones too, oldest first')
    .action(
      action(async (client, globals) => {
        const answer = await client.operators();
        if (globals.json) return printJson(answer);
        print(answer.operators.length === 0 ? 'No operator accounts yet: palaver admin operators add <name>.' : operatorsTable(answer.operators));
      }),
    );

  operators
    .command('disable')
    .description('disable an operator account: its token and dashboard sessions stop working at once')
    .argument('<name-or-id>', 'the operator, by name (any case) or id')
    .action(
      action(async (client, globals, _options: object, nameOrId: string) => {
        const answer = await client.disableOperator((await findOperator(client, nameOrId)).id);
        if (globals.json) return printJson(answer);
        print(`Disabled ${singleLine(answer.operator.name)}: their token and dashboard sessions no longer work.`);
      }),
    );

  operators
    .command('reset-token')
    .description('issue an operator a new token, shown this once; the old one and its dashboard sessions stop working')
    .argument('<name-or-id>', 'the operator, by name (any case) or id')
    .action(
      action(async (client, globals, _options: object, nameOrId: string) => {
        const answer = await client.resetOperatorToken((await findOperator(client, nameOrId)).id);
        if (globals.json) return printJson(answer);
        print(`New token for ${singleLine(answer.operator.name)}, shown this once (the old one no longer works):`);
        print(answer.token);
      }),
    );

  return operators;
}

/** The operator named (in any case) or with this id. @throws AdminApiError `not_found` (exit 2) when there is none. */
async function findOperator(client: AdminClient, nameOrId: string): Promise<z.infer<typeof operatorAccount>> {
  const { operators } = await client.operators();
  const wanted = nameOrId.trim().toLowerCase();
  const found = operators.find((operator) => operator.id === nameOrId) ?? operators.find((operator) => operator.name.toLowerCase() === wanted);
  if (found !== undefined) return found;
  const { AdminApiError } = await import('../admin/admin-client.js');
  throw new AdminApiError('not_found', 'not_found', `There is no operator named ${singleLine(nameOrId)}; see palaver admin operators list.`);
}

function operatorsTable(operators: readonly z.infer<typeof operatorAccount>[]): string {
  return renderTable(
    [{ header: 'NAME', max: 32 }, { header: 'ROLE' }, { header: 'ID', max: 36 }, { header: 'CREATED' }, { header: 'DISABLED' }],
    operators.map((operator) => [operator.name, operator.role, operator.id, when(operator.createdAt), when(operator.disabledAt)]),
  );
}

type Action<Options, Args extends unknown[]> = (client: AdminClient, globals: GlobalOptions, options: Options, ...args: Args) => Promise<void>;

/**
 * A command's action with the client built from the global options, and every failure turned into its message on
 * stderr and its exit code.
 */
function action<Options, Args extends unknown[]>(run: Action<Options, Args>): (...input: unknown[]) => Promise<void> {
  return async (...input) => {
    const command = input[input.length - 1] as Command;
    const options = input[input.length - 2] as Options;
    const args = input.slice(0, -2) as Args;
    const globals = command.optsWithGlobals<GlobalOptions>();
    try {
      const settings = adminConsoleSettings({
        ...(globals.url === undefined ? {} : { url: globals.url }),
        ...(globals.config === undefined ? {} : { file: globals.config }),
      });
      const { AdminClient, isOperatorToken } = await import('../admin/admin-client.js');
      // An operator token names its operator: the server would ignore a name passed on with it.
      if (globals.actor !== undefined && isOperatorToken(settings.token)) console.error('--actor is not sent: your operator token names you in the audit.');
      const actor = globals.actor ?? loginName();
      await run(new AdminClient({ url: settings.url, token: settings.token, ...(actor === undefined ? {} : { actor }) }), globals, options, ...args);
    } catch (error) {
      if (!(error instanceof PalaverError)) throw error;
      const { AdminApiError } = await import('../admin/admin-client.js');
      console.error(error.message);
      process.exitCode = error instanceof AdminApiError ? EXIT_BY_FAILURE[error.kind] : ADMIN_EXIT.usage;
    }
  };
}

const EXIT_BY_FAILURE = {
  invalid: ADMIN_EXIT.usage,
  not_found: ADMIN_EXIT.notFound,
  refused: ADMIN_EXIT.refused,
  unavailable: ADMIN_EXIT.unavailable,
} as const;

/** Follows `nextCursor` with `--all` (stopping if a server hands the same cursor back); one page otherwise. */
async function allPages<Page extends { nextCursor: string | null }, Item, Out>(
  options: PageOptions,
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  items: (page: Page) => Item[],
  combine: (items: Item[], nextCursor: string | null) => Out,
): Promise<Out> {
  const first = await fetchPage(options.cursor);
  if (!options.all) return combine(items(first), first.nextCursor);
  const collected = [...items(first)];
  const seen = new Set<string>();
  let next = first.nextCursor;
  while (next !== null && !seen.has(next)) {
    seen.add(next);
    const page = await fetchPage(next);
    collected.push(...items(page));
    next = page.nextCursor;
  }
  return combine(collected, null);
}

function limitOption(max: number): Option {
  return new Option('--limit <n>', `at most this many (1-${max})`).argParser((value) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`a whole number from 1 to ${max}`);
    return n;
  });
}

/** What the admin API accepts as an operator's name. */
const ACTOR = /^[\p{L}\p{N} ._@-]{1,64}$/u;

function parseActor(value: string): string {
  if (!ACTOR.test(value.trim())) throw new InvalidArgumentError('1 to 64 letters, digits, spaces or ._@-');
  return value.trim();
}

/** The login name, when the admin API can record it as it is. */
function loginName(): string | undefined {
  try {
    const name = userInfo().username;
    return ACTOR.test(name) ? name : undefined;
  } catch {
    // No entry for this uid (a container's arbitrary user): the server records `admin`.
    return undefined;
  }
}

function parseInstant(value: string): string {
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError('a date (2026-11-01) or an ISO 8601 instant (2026-11-01T09:00:00Z)');
  }
  return value;
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

function printMore(nextCursor: string | null): void {
  if (nextCursor !== null) print(`\nMore: add --cursor ${singleLine(nextCursor)} (or --all).`);
}

function usersTable(users: readonly z.infer<typeof userSummary>[]): string {
  return renderTable(
    [
      { header: 'USER', max: 36 },
      { header: 'NAME', max: 24 },
      { header: 'PHONE' },
      { header: 'ROLE' },
      { header: 'ACCOUNTS', max: 36 },
      { header: 'CONV', align: 'right' },
      { header: 'COST', align: 'right' },
      { header: 'LAST ACTIVE' },
    ],
    users.map((user) => [
      user.id,
      user.displayName ?? '',
      user.phone === null ? '' : `+${user.phone.replace(/^\+/, '')}`,
      user.role ?? '',
      user.accounts.map((account) => `${account.channel}:${account.accountId}`).join(', '),
      String(user.conversations),
      user.costs.length === 0 ? '0' : user.costs.map((entry) => `${entry.cost} ${entry.currency}`).join(' + '),
      when(user.lastActiveAt),
    ]),
  );
}

function conversationsTable(conversations: readonly z.infer<typeof conversationSummary>[]): string {
  return renderTable(
    [
      { header: 'SESSION', max: 36 },
      { header: 'CHANNEL' },
      { header: 'PERSON', max: 24 },
      { header: 'STATUS' },
      { header: 'WAIT', align: 'right' },
      { header: 'COST', align: 'right' },
      { header: 'LAST MESSAGE', max: 48 },
      { header: 'UPDATED' },
    ],
    conversations.map((conversation) => [
      conversation.sessionId,
      conversation.channel,
      conversation.user.displayName ?? conversation.user.id,
      conversationState(conversation),
      String(conversation.waiting),
      `${conversation.cost} ${conversation.currency}`,
      conversation.lastMessage === null ? '' : `${conversation.lastMessage.role === 'user' ? '›' : '‹'} ${conversation.lastMessage.text}`,
      when(conversation.updatedAt),
    ]),
  );
}

function conversationState(conversation: z.infer<typeof conversationSummary>): string {
  return [
    conversation.status,
    ...(conversation.paused ? ['paused'] : []),
    ...(conversation.handoff === null ? [] : ['handed over']),
    ...(conversation.assignedTo === null ? [] : [`with ${singleLine(conversation.assignedTo)}`]),
    ...(conversation.endedAt === null ? [] : ['ended']),
  ].join(', ');
}

const AUTHOR_LABEL = { person: 'person', agent: 'agent', operator: 'operator', palaver: 'palaver' } as const;

function transcriptText(answer: z.infer<typeof transcript>): string {
  const { conversation } = answer;
  const lines = [
    `${singleLine(conversation.sessionId)}  ${singleLine(conversation.channel)} ${singleLine(conversation.conversationId)}  ${conversation.user.displayName === null ? '' : `${singleLine(conversation.user.displayName)} `}(${singleLine(conversation.user.id)})`,
    `${conversationState(conversation)} · ${conversation.waiting} waiting · cost ${conversation.cost} ${conversation.currency} · tokens ${conversation.inputTokens} in, ${conversation.outputTokens} out`,
    ...(conversation.handoff === null
      ? []
      : [`handed over ${when(conversation.handoff.requestedAt)} (${conversation.handoff.source}): ${singleLine(conversation.handoff.reason)}`]),
    '',
  ];
  if (answer.summaries.length > 0) {
    // Each version covers all before it: the one the agent reads is shown whole, the others by what they cover.
    lines.push('Summaries of the earlier conversation (newest first):');
    for (const summary of answer.summaries) {
      lines.push(
        `  v${summary.version}  #${summary.fromSeq + 1}–#${summary.toSeq}  ${when(summary.at)}  ${summary.cost} ${singleLine(summary.currency)} · ${singleLine(summary.model)}${summary.current ? '  (read by the agent now)' : ''}`,
      );
      if (summary.current) for (const line of safeText(summary.text).split('\n')) lines.push(`      ${line}`);
    }
    lines.push('');
  }
  if (answer.messages.length === 0) lines.push('No messages.');
  for (const message of answer.messages) {
    const who = message.audience === 'display' ? AUTHOR_LABEL[message.author] : `${message.role} (${singleLine(message.audience)})`;
    const cost = message.role === 'assistant' && Number(message.cost) !== 0 ? `  ${message.cost}${message.model ? ` · ${singleLine(message.model)}` : ''}` : '';
    lines.push(`#${message.seq}  ${when(message.at)}  ${who}${cost}`);
    for (const line of safeText(message.text).split('\n')) lines.push(`    ${line}`);
    for (const call of message.toolCalls ?? []) {
      const latency = call.latencyMs === null ? '' : ` ${call.latencyMs} ms`;
      lines.push(`    ↳ ${singleLine(call.name)}(${singleLine(call.arguments)}) ${call.status}${latency}`);
      if (call.error !== null) lines.push(`      error: ${singleLine(call.error)}`);
      else if (call.result !== null) lines.push(`      → ${singleLine(call.result)}`);
    }
  }
  return lines.join('\n');
}

function handoffsText(answer: z.infer<typeof handoffs>): string {
  if (answer.handoffs.length === 0) return 'Nobody waits for a person.';
  const table = renderTable(
    [
      { header: 'SESSION', max: 36 },
      { header: 'CHANNEL' },
      { header: 'PERSON', max: 24 },
      { header: 'REASON', max: 48 },
      { header: 'SOURCE' },
      { header: 'REQUESTED' },
      { header: 'TAKEN BY', max: 24 },
    ],
    answer.handoffs.map((handoff) => [
      handoff.sessionId,
      handoff.channel ?? '',
      handoff.person.name ?? handoff.person.id,
      handoff.reason,
      handoff.source,
      when(handoff.requestedAt),
      handoff.takenBy ?? '',
    ]),
  );
  return `${table}\n\n${answer.waiting} waiting for a person.`;
}

function costsText(answer: z.infer<typeof costs>): string {
  if (answer.rows.length === 0) return 'No costs in this period.';
  const table = renderTable(
    [
      { header: answer.by.toUpperCase(), max: 36 },
      { header: 'NAME', max: 24 },
      { header: 'COST', align: 'right' },
      { header: 'CUR' },
      { header: 'TURNS', align: 'right' },
      { header: 'IN', align: 'right' },
      { header: 'OUT', align: 'right' },
      { header: 'MODELS', max: 40 },
    ],
    answer.rows.map((row) => [
      row.key,
      row.label ?? '',
      row.cost,
      row.currency,
      String(row.turns),
      String(row.inputTokens),
      String(row.outputTokens),
      row.models.map((usage) => usage.model).join(', '),
    ]),
  );
  const totals = answer.totals.map((total) => `${total.cost} ${total.currency}`).join(' + ');
  return `${table}\n\nTotal: ${totals}`;
}

/** An ISO instant as `YYYY-MM-DD HH:MM` UTC; empty for none. */
function when(iso: string | null): string {
  if (iso === null) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? singleLine(iso) : date.toISOString().slice(0, 16).replace('T', ' ');
}
