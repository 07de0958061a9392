import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/domain/ports/store.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';
import { readSqliteFile } from '../support/sqlite-file.js';

const CHILD = fileURLToPath(new URL('./journal-child.ts', import.meta.url));
const CONVERSATIONS = 30;
const MESSAGES_EACH = 10;
const LEASE_MS = 300;
/** After this many kills the last process runs to the end, so the test ends even on a slow machine. */
const MAX_KILLS = 10;
/** The whole run, kills and restarts included, must answer everything within this (generous: a loaded machine starts processes slowly). */
const DEADLINE_MS = 240_000;

let model: ScriptedModelServer | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  store = model = undefined;
});

/** A small seeded generator (mulberry32), so a failing run can be replayed with CHAOS_SEED. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The "done when": 300 turns over 30 conversations, each booking two slots with a tool that logs `start
 * <idempotency key>` before its effect and `done <key>` after it, while the process is SIGKILLed at a random point
 * (within 400 ms of its first tool call) and restarted on the same database, ten times, and then runs until every
 * message is answered. About 40 s on two idle cores, most of it the ten start-ups.
 */
describe('chaos: SIGKILL at random points over 300 turns', () => {
  it('answers every accepted message once, sends no reply twice and runs no finished tool call again', async () => {
    const seed = Number(process.env['CHAOS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`chaos seed ${seed} (replay with CHAOS_SEED=${seed})`);
    const next = random(seed);

    const dir = mkdtempSync(join(tmpdir(), 'palaver-chaos-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a booking agent.');
    const toolLog = join(dir, 'tool.log');
    writeFileSync(toolLog, '');
    const databasePath = join(dir, 'palaver.db');
    model = await startScriptedModelServer({
      script: (call) => {
        const text = call.messages.flatMap((item) => (item.type === 'message' && item.role === 'user' ? [item.content] : [])).at(-1)!;
        const usage = { input: 10, output: 5 };
        return call.messages.at(-1)?.type === 'tool_result'
          ? { text: `answer ${text}`, usage }
          : {
              toolCalls: [
                { name: 'book', arguments: { slot: `${text}-1` } },
                { name: 'book', arguments: { slot: `${text}-2` } },
              ],
              usage,
            };
      },
    });
    // A turn that began work (its tool calls journaled) and was taken over after a crash counts as an attempt (a message
    // that kills its process must not loop), and past `inbox.maxTurnAttempts` it is answered with an apology. Here kills
    // come every second or two, so one message may be cut off by several: allow one attempt per kill, so that every
    // message still gets the model's answer.
    const config = JSON.stringify({
      databaseUrl: `sqlite:${databasePath}`,
      modelUrl: model.baseUrl,
      instructionsDir: join(dir, 'instructions'),
      leaseMs: LEASE_MS,
      maxTurnAttempts: MAX_KILLS + 1,
      toolLog,
      toolDelayMs: 50,
    });

    const texts = Array.from({ length: CONVERSATIONS }, (_, c) => Array.from({ length: MESSAGES_EACH }, (_, m) => `c${c}m${m}`));
    /** Per conversation, the message it is at (sent, until its answer is seen). */
    const position = new Array<number>(CONVERSATIONS).fill(0);
    const answered = new Set<string>();
    const sends = new Map<string, number>();
    /** Replies a kill caught after the channel took them and before they were marked sent: they may go out again. */
    const cutBeforeMarked = new Set<string>();
    /**
     * Tool calls Palaver knew as finished when a process was killed (their result in the journal, or their turn's reply
     * sent), with the tool log's length then: nothing may start them again after that point. A call whose tool wrote
     * `done` but whose result the kill kept from the journal was, for Palaver, cut off while running: it may run again,
     * under the same key.
     */
    const finishedAt = new Map<string, number>();
    const finishedSince = (name: string, offset: number) => finishedAt.set(name, Math.min(finishedAt.get(name) ?? offset, offset));
    const children: RunningChild[] = [];
    const started = Date.now();
    let kills = 0;

    while (answered.size < CONVERSATIONS * MESSAGES_EACH) {
      expect(Date.now() - started, `not every message was answered in time (seed ${seed})`).toBeLessThan(DEADLINE_MS);
      const child = spawnNode(CHILD, [config], { cwd: REPO_ROOT, env: cleanEnv() });
      children.push(child);
      const say = (conversation: number) => {
        const text = texts[conversation]![position[conversation]!];
        if (text !== undefined) child.process.stdin.write(`c${conversation} ${text}\n`);
      };
      let buffered = '';
      child.process.stdout.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          const reply = /^sent answer (c(\d+)m\d+)$/.exec(line);
          if (!reply) continue;
          sends.set(reply[1]!, (sends.get(reply[1]!) ?? 0) + 1);
          if (answered.has(reply[1]!)) continue;
          answered.add(reply[1]!);
          // The next message of the conversation goes once the last one is answered: one turn per message.
          const conversation = Number(reply[2]);
          position[conversation]! += 1;
          say(conversation);
        }
      });
      await child.waitForOutput(/^ready$/m, 60_000);
      store ??= await openStore(`sqlite:${databasePath}`, { migrate: false });
      // Every conversation's current message, again: one the dead process had stored is a duplicate (same dedupe key).
      for (let conversation = 0; conversation < CONVERSATIONS; conversation++) say(conversation);

      if (kills >= MAX_KILLS) {
        await expect.poll(() => answered.size, { timeout: DEADLINE_MS - (Date.now() - started), interval: 100 }).toBe(CONVERSATIONS * MESSAGES_EACH);
        await child.stop('SIGTERM');
        break;
      }
      // A random point while turns are under way: once this process ran a tool of its own, within 400 ms.
      const logSize = statSync(toolLog).size;
      await expect
        .poll(() => statSync(toolLog).size > logSize || answered.size === CONVERSATIONS * MESSAGES_EACH, { timeout: 30_000, interval: 10 })
        .toBe(true);
      await new Promise((resolve) => setTimeout(resolve, next() * 400));
      await child.stop('SIGKILL');
      kills += 1;
      const logLength = statSync(toolLog).size;
      // Read as another process would, on the binding Palaver uses on this Node (better-sqlite3 aborts Node 24 in GC).
      const { finished, pending } = readSqliteFile(databasePath, (database) => ({
        finished: database.all<{ call_id: string }>("select call_id from tool_calls where status <> 'running'").map((row) => row.call_id),
        pending: new Set(database.all<{ text: string }>("select text from deliveries where state = 'pending'").map((row) => row.text)),
      }));
      for (const key of finished) finishedSince(`key ${key}`, logLength);
      for (const text of answered) for (const part of [1, 2]) finishedSince(`slot ${text}-${part}`, logLength);
      for (const line of child.stdout().split('\n'))
        if (line.startsWith('sent ') && pending.has(line.slice(5))) cutBeforeMarked.add(line.slice('sent answer '.length));
    }
    console.log(
      `chaos: ${kills} kills, ${children.length} processes, ${Math.round((Date.now() - started) / 1000)} s, ${cutBeforeMarked.size} replies caught between send and mark`,
    );

    // Every accepted message answered exactly once, in the store.
    const allTexts = texts.flat();
    const replies = new Map<string, number>();
    let sessions = 0;
    for (let conversation = 0; conversation < CONVERSATIONS; conversation++) {
      const user = await store!.users.findByAccount('chat', `c${conversation}`);
      for (const session of await store!.sessions.listByUser(user!.id)) {
        sessions += 1;
        expect(await store!.inbound.listQueued(session.id)).toEqual([]);
        // The turn's journal went with its reply.
        expect(await store!.toolCalls.listBySession(session.id)).toEqual([]);
        for (const message of await store!.messages.listRecent(session.id, { limit: 100, audience: 'display' })) {
          if (message.role !== 'assistant') continue;
          replies.set(message.content, (replies.get(message.content) ?? 0) + 1);
          // Two model calls per turn, each counted once (a replayed call is not paid again).
          expect({ reply: message.content, input: message.inputTokens, output: message.outputTokens }).toEqual({
            reply: message.content,
            input: 20,
            output: 10,
          });
        }
      }
    }
    expect(sessions).toBe(CONVERSATIONS);
    expect([...replies].filter(([, count]) => count !== 1)).toEqual([]);
    expect([...replies.keys()].sort()).toEqual(allTexts.map((text) => `answer ${text}`).sort());

    // No duplicate send, save a reply the kill caught between the channel taking it and its mark.
    const duplicates = [...sends].filter(([text, count]) => count > (cutBeforeMarked.has(text) ? 2 : 1));
    expect(duplicates, `seed ${seed}`).toEqual([]);

    // No finished tool call ran again: nothing starts a call after Palaver knew it finished; one key per slot.
    const byKey = new Map<string, string[]>();
    const keysBySlot = new Map<string, Set<string>>();
    const startedAfterFinished: string[] = [];
    let offset = 0;
    for (const line of readFileSync(toolLog, 'utf8').trim().split('\n')) {
      const [event, key, slot] = line.split(' ') as [string, string, string];
      const finished = Math.min(finishedAt.get(`key ${key}`) ?? Infinity, finishedAt.get(`slot ${slot}`) ?? Infinity);
      if (event === 'start' && offset >= finished) startedAfterFinished.push(line);
      offset += Buffer.byteLength(line) + 1;
      byKey.set(key, [...(byKey.get(key) ?? []), event]);
      keysBySlot.set(slot, (keysBySlot.get(slot) ?? new Set()).add(key));
    }
    expect(startedAfterFinished, `seed ${seed}`).toEqual([]);
    // Calls a kill cut off between their tool's return and their record (they ran again under the same key).
    const doneTwice = [...byKey].filter(([, events]) => events.filter((event) => event === 'done').length > 1).length;
    expect([...byKey].filter(([, events]) => !events.includes('done'))).toEqual([]);
    expect([...keysBySlot].filter(([, keys]) => keys.size !== 1)).toEqual([]);
    expect(keysBySlot.size).toBe(allTexts.length * 2);
    const runAgain = [...byKey.values()].filter((events) => events.length > 2).length;
    console.log(
      `chaos: ${byKey.size} tool calls, ${runAgain} cut off while running and run again under the same key (${doneTwice} after their tool returned, before their record)`,
    );
  }, 300_000);
});
