import { afterEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/domain/model.js';
import {
  conversationItems,
  newVisitor,
  postRun,
  startCluster,
  webRun,
  type ClusterDatabase,
  type ModelRequest,
  type PalaverCluster,
  type RunResult,
  type WebRun,
} from '../support/palaver-cluster.js';

// Issue #25: two real `palaver start` processes on one database serve the same web chat, as two processes behind a
// load balancer. What a user would notice: every message answered once, never two answers of one conversation
// written at once (the model would see a history without the other's reply), a crashed process's turn finished by
// the other once its claim runs out, a paused process that wakes up after its claim ran out writing and sending nothing.

/**
 * How long after a SIGKILL the other process must have finished the killed process's turn here: long enough for a
 * takeover by the claim's lease (2-3 s with the defaults, plus whatever a loaded machine adds to starting work), short
 * enough to tell it from none or from one that waits out a 15 s timeout. How fast the takeover is (issue #25's goal:
 * within 3 s) is a benchmark, `npm run bench -- --only scale` (BENCHMARKS.md), measured on a machine doing nothing
 * else; a timed bound here failed when two suites shared the machine (4.0 s).
 */
const TAKEOVER_BY_LEASE_MS = 10_000;
/** The claim a paused process must be paused past (`inbox.leaseMs`, by default). */
const LEASE_MS = 2_000;

let cluster: PalaverCluster | undefined;

/** The message tags (`c07-m3`, `kill2-m1`, …) in a text. */
const tagsIn = (text: string): string[] => [...text.matchAll(/\b([a-z]+\d*-m\d+)\b/g)].map((match) => match[1]!);

/** The tags of the user messages a request answers: those after the last assistant message it was shown. */
function newTags(request: ModelRequest): string[] {
  const items = conversationItems(request.call);
  const lastReply = items.findLastIndex((item) => item.role === 'assistant');
  return items.slice(lastReply + 1).flatMap((item) => (item.role === 'user' ? tagsIn(item.text) : []));
}

/** The conversation a request is for: the prefix of the tags it answers (`c07`, `kill2`). */
const conversationOf = (request: ModelRequest): string =>
  (
    newTags(request)[0] ??
    tagsIn(
      conversationItems(request.call)
        .map((item) => item.text)
        .join(' '),
    )[0] ??
    '?'
  ).split('-')[0]!;

/** The assistant replies a request was shown, in order. */
const repliesShown = (request: ModelRequest): string[] => conversationItems(request.call).flatMap((item) => (item.role === 'assistant' ? [item.text] : []));

/** The displayed user and assistant messages stored for a web thread, oldest first ([] before its session exists). */
async function storedMessages(current: PalaverCluster, threadId: string): Promise<StoredMessage[]> {
  const store = await current.store();
  const session = await store.sessions.findByConversation('web', threadId);
  if (!session) return [];
  const messages = await store.messages.listRecent(session.id, { limit: 1_000, audience: 'display' });
  return messages.filter((message) => message.role === 'user' || message.role === 'assistant');
}

const repliesStored = async (current: PalaverCluster, threadId: string): Promise<string[]> =>
  (await storedMessages(current, threadId)).filter((message) => message.role === 'assistant').map((message) => message.content);

/** Messages of the thread still waiting in the inbox. */
async function queued(current: PalaverCluster, threadId: string): Promise<number> {
  const store = await current.store();
  const session = await store.sessions.findByConversation('web', threadId);
  return session ? (await store.inbound.listQueued(session.id)).length : 0;
}

/** Pairs of model requests of one conversation whose times overlap: two turns at once. */
function overlaps(requests: readonly ModelRequest[]): string[] {
  const found: string[] = [];
  const byConversation = groupBy(requests, conversationOf);
  for (const [conversation, list] of byConversation) {
    const sorted = [...list].sort((x, y) => x.startedAt - y.startedAt);
    for (const [i, first] of sorted.entries()) {
      for (const second of sorted.slice(i + 1)) {
        const firstEnd = first.endedAt ?? Number.POSITIVE_INFINITY;
        if (second.startedAt < firstEnd) {
          found.push(
            `${conversation}: ${first.via} [${newTags(first).join(',')}] ${first.startedAt.toFixed(0)}–${first.endedAt?.toFixed(0) ?? 'open'} and ${second.via} [${newTags(second).join(',')}] from ${second.startedAt.toFixed(0)}`,
          );
        }
      }
    }
  }
  return found;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

/** Expects no problems (softly, so one run shows every kind), naming how many and the first few. */
function expectNone(problems: readonly string[], what: string): void {
  expect.soft(problems.length === 0 ? [] : [`${problems.length} ${what}`, ...problems.slice(0, 8)]).toEqual([]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gate a model answer waits behind. */
/** The turns a process stopped because another took their conversation over (`palaver_turns_fenced_out_total`). */
async function fencedTurns(base: string): Promise<number> {
  const metrics = await (await fetch(`${base}/metrics`)).text();
  return Number(/^palaver_turns_fenced_out_total (\d+)/m.exec(metrics)?.[1] ?? Number.NaN);
}

function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * The tests, on one database; each database has its file (two-processes-<database>.test.ts), so that the three run
 * side by side rather than as one long file at the end of the suite.
 */
export function describeTwoProcesses(name: string, database: ClusterDatabase): void {
  describe(`two Palaver processes on ${name}`, () => {
    afterEach(async () => {
      await cluster?.close();
      cluster = undefined;
    });

    it('50 conversations in bursts through both processes: every message answered once, no two turns of a conversation at once, no stale history', async () => {
      const CONVERSATIONS = 50;
      const BURSTS = 3;
      const BURST = 3;
      let replies = 0;
      cluster = await startCluster({
        database,
        // Long enough that a second turn of the conversation, started meanwhile in the other process, overlaps it.
        script: (_call, request) => ({ text: `reply ${++replies} to ${newTags(request).join('+')} by ${request.via}`, delayMs: 150 }),
      });
      const [a, b] = cluster.processes as [NonNullable<PalaverCluster['processes'][0]>, NonNullable<PalaverCluster['processes'][0]>];
      const thread = (c: number) => `c${String(c).padStart(2, '0')}`;
      const sent: Array<{ tag: string; threadId: string; runId: string; via: string; result: RunResult }> = [];
      const started = performance.now();
      // Well inside the test's own timeout, so that a run that never ends fails with what was still waiting and what
      // the processes logged, rather than a bare timeout.
      const deadline = AbortSignal.timeout(90_000);
      const waiting = new Set<string>();

      const bursts = Promise.all(
        Array.from({ length: CONVERSATIONS }, async (_, c) => {
          // Fifty people, each in a conversation of their own (the page's cookie from one process, used on both).
          const cookie = await newVisitor((c % 2 === 0 ? a : b).url);
          const threadId = `${thread(c)}-${Date.now().toString(36)}`;
          for (let burst = 0; burst < BURSTS; burst += 1) {
            // A burst: the messages go out at once, alternately through a and b (which one goes first alternates too).
            await Promise.all(
              Array.from({ length: BURST }, async (_, m) => {
                const tag = `${thread(c)}-m${burst * BURST + m + 1}`;
                const target = (burst + m + c) % 2 === 0 ? a : b;
                const run = webRun(threadId, `${tag} what about number ${m}?`);
                waiting.add(`${tag} via ${target.label}`);
                const result = await postRun(target.url, cookie, run, deadline);
                waiting.delete(`${tag} via ${target.label}`);
                sent.push({ tag, threadId, runId: run.runId, via: target.label, result });
              }),
            );
          }
        }),
      );
      await bursts.catch((error: unknown) => {
        const unanswered = cluster!.requests.filter((request) => request.endedAt === undefined).map((request) => newTags(request).join('+'));
        const logs = [a, b].map((proc) => `${proc.label}: ${proc.child.stdout().slice(-3000)}${proc.child.stderr().slice(-3000)}`).join('\n');
        throw new Error(
          `runs not finished (the deadline is 90 s; the cause says what ended them): ${[...waiting].join(', ')}; model requests unanswered: ${JSON.stringify(unanswered)}; ${cluster!.requests.length} requests in all\n${logs}`,
          { cause: error },
        );
      });
      console.log(
        `${database}: ${sent.length} messages of ${CONVERSATIONS} conversations answered in ${((performance.now() - started) / 1000).toFixed(1)} s with ${cluster.requests.length} model requests`,
      );

      // A process stalled past its lease (a loaded machine) loses its conversation's claim: its turn is fenced, stores
      // and sends nothing, and the message is answered by the turn that follows. Such a turn's model request is counted
      // here against the processes' own count of fenced turns; every check below is about the turns that took effect.
      const stored = new Set<string>();
      for (const threadId of new Set(sent.map((s) => s.threadId)))
        for (const message of await storedMessages(cluster, threadId)) if (message.role === 'assistant') stored.add(message.content);
      const requests = cluster.requests.filter((request) => stored.has(request.reply ?? ''));
      const fencedOut = cluster.requests.length - requests.length;
      const fencedCounted = (await Promise.all([a, b].map((proc) => fencedTurns(proc.url)))).reduce((x, y) => x + y, 0);
      console.log(`${database}: ${fencedOut} model requests of fenced-out turns (the processes counted ${fencedCounted})`);
      expect(fencedOut).toBe(fencedCounted);
      // No two turns of one conversation at once: their model requests never overlap in time.
      expectNone(overlaps(requests), 'pairs of overlapping model requests of one conversation');

      // Every message is answered by exactly one turn (one model request), and its run shows that turn's reply.
      const answeredBy = new Map<string, ModelRequest[]>();
      for (const request of requests) for (const tag of newTags(request)) answeredBy.set(tag, [...(answeredBy.get(tag) ?? []), request]);
      const notOnce = sent.filter(({ tag }) => answeredBy.get(tag)?.length !== 1).map(({ tag }) => `${tag}: ${answeredBy.get(tag)?.length ?? 0} requests`);
      expectNone(notOnce, 'messages not answered by exactly one model request');
      // A run shows the reply of the turn that answered its message; of several runs answered by one turn (a batch),
      // the others end `answered_together`, naming the run that shows it.
      const byRunId = new Map(sent.map((s) => [s.runId, s]));
      const wrongShown = sent
        .filter(({ tag, result }) => {
          const reply = answeredBy.get(tag)?.[0]?.reply;
          if (result.status !== 200) return true;
          if (result.finished === 'completed') return result.text !== reply;
          if (result.finished !== 'answered_together') return true;
          const carrier = byRunId.get(String((result.events.at(-1)?.['result'] as { answeredIn?: string } | undefined)?.answeredIn));
          return result.text !== '' || carrier === undefined || carrier.result.finished !== 'completed' || carrier.result.text !== reply;
        })
        .map(({ tag, via, result }) => `${tag} via ${via}: ${result.status} ${result.finished} "${result.text.slice(0, 80)}"`);
      expectNone(wrongShown, 'runs that did not show the reply of the turn that answered them');

      // Each request was shown every reply of its conversation stored before it (whichever process wrote it), in order.
      const byConversation = groupBy(requests, conversationOf);
      const stale: string[] = [];
      let fromTheOther = 0;
      for (const [conversation, list] of byConversation) {
        const sorted = [...list].sort((x, y) => x.startedAt - y.startedAt);
        for (const [k, request] of sorted.entries()) {
          const before = sorted.slice(0, k).map((earlier) => earlier.reply!);
          if (JSON.stringify(repliesShown(request)) !== JSON.stringify(before))
            stale.push(
              `${conversation} request ${k} by ${request.via} was shown ${JSON.stringify(repliesShown(request))}, stored before it: ${JSON.stringify(before)}`,
            );
          if (k > 0 && sorted[k - 1]!.via !== request.via) fromTheOther += 1;
        }
      }
      expectNone(stale, 'model requests not shown exactly the replies stored before them');
      // The check above means something: turns followed ones the other process had answered (the bursts start on
      // alternate processes, so a conversation's claim changes hands between bursts).
      expect(fromTheOther).toBeGreaterThanOrEqual(10);

      // In the database: each message stored once, one reply per turn (in the order of the turns), nothing left queued.
      const wrongStored: string[] = [];
      for (const threadId of new Set(sent.map((s) => s.threadId))) {
        const conversation = threadId.split('-')[0]!;
        const stored = await storedMessages(cluster, threadId);
        const storedTags = stored
          .filter((message) => message.role === 'user')
          .flatMap((message) => tagsIn(message.content))
          .sort();
        const sentTags = sent
          .filter((s) => s.threadId === threadId)
          .map((s) => s.tag)
          .sort();
        if (JSON.stringify(storedTags) !== JSON.stringify(sentTags))
          wrongStored.push(`${conversation}: messages stored ${JSON.stringify(storedTags)}, sent ${JSON.stringify(sentTags)}`);
        const storedReplies = stored.filter((message) => message.role === 'assistant').map((message) => message.content);
        const turnReplies = [...(byConversation.get(conversation) ?? [])].sort((x, y) => x.startedAt - y.startedAt).map((request) => request.reply);
        if (JSON.stringify(storedReplies) !== JSON.stringify(turnReplies))
          wrongStored.push(`${conversation}: replies stored ${JSON.stringify(storedReplies)}, model answered ${JSON.stringify(turnReplies)}`);
        const left = await queued(cluster, threadId);
        if (left > 0) wrongStored.push(`${conversation}: ${left} messages still queued`);
      }
      expectNone(wrongStored, "conversations whose stored messages are not each message once and each turn's reply once");
    }, 120_000);

    it('SIGKILL of the process whose turn waits on the model, 3 times (each process killed at least once): the other finishes the turn once its claim runs out, once; the retried run gets the reply', async () => {
      const ROUNDS = 3;
      const held = new Map<string, ReturnType<typeof gate>>();
      cluster = await startCluster({
        database,
        // Out of the box: the defaults' lease (a heartbeat of about 1 s) decides when the other process takes over.
        script: async (_call, request) => {
          const tags = newTags(request);
          const first = tags.find((tag) => tag.endsWith('-m1') && !held.has(tag));
          // The first request for a round's first message waits until the test has killed the process that made it.
          if (first) {
            const wait = gate();
            held.set(first, wait);
            await wait.opened;
          }
          return { text: `answer to ${tags.join('+')} by ${request.via}` };
        },
      });
      const cookie = await newVisitor(cluster.process('a').url);
      const takeovers: number[] = [];
      const retries: number[] = [];
      const threads: string[] = [];

      for (let round = 0; round < ROUNDS; round += 1) {
        const [victim, survivor] = round % 2 === 0 ? [cluster.process('a'), cluster.process('b')] : [cluster.process('b'), cluster.process('a')];
        const threadId = `kill${round}-${Date.now().toString(36)}`;
        threads.push(threadId);
        const tag = `kill${round}-m1`;
        const run = webRun(threadId, `${tag} please look into my order`);
        const lost = postRun(victim.url, cookie, run).catch((error: unknown) => error);
        await expect
          .poll(() => cluster!.requests.some((request) => request.via === victim.label && newTags(request).includes(tag)), { timeout: 15_000, interval: 10 })
          .toBe(true);

        const killedAt = performance.now();
        await victim.kill();
        // The model answers the dead process's request: nobody is there to store or show it.
        held.get(tag)!.open();
        await lost;
        // The visitor's page retries the same run; the load balancer sends it to the survivor.
        const retry = postRun(survivor.url, cookie, run);
        // (Should this round fail, the stream is cut when the cluster closes: not an error of its own.)
        retry.catch(() => {});
        // Long enough to see a takeover that waits for a 15 s lease, so the bound below reports how long it took.
        await expect.poll(() => repliesStored(cluster!, threadId), { timeout: 40_000, interval: 20 }).toHaveLength(1);
        const takeoverMs = performance.now() - killedAt;
        takeovers.push(takeoverMs);
        expect(takeoverMs, `round ${round}: SIGKILL of ${victim.label} → reply stored by ${survivor.label}`).toBeLessThanOrEqual(TAKEOVER_BY_LEASE_MS);
        const retried = await retry;
        retries.push(retried.endedAt - killedAt);
        const answer = `answer to ${tag} by ${survivor.label}`;
        expect(await repliesStored(cluster, threadId)).toEqual([answer]);
        expect(retried.status).toBe(200);
        expect(retried.text).toBe(answer);
        expect(['completed', 'duplicate']).toContain(retried.finished);

        // The killed process comes back; a next message of the conversation through it sees the one reply.
        await victim.restart();
        const next = await postRun(victim.url, cookie, webRun(threadId, `kill${round}-m2 thanks, and the invoice?`));
        expect(next.finished).toBe('completed');
        expect(next.text).toMatch(new RegExp(`^answer to kill${round}-m2 by `));
      }

      console.log(
        `${database}: SIGKILL → turn finished by the other process: ${takeovers.map((ms) => ms.toFixed(0)).join(', ')} ms; → retried run ended: ${retries.map((ms) => ms.toFixed(0)).join(', ')} ms`,
      );

      // Nothing answered twice, nothing unanswered: each message's turn asked the model once more than the killed one did.
      for (let round = 0; round < ROUNDS; round += 1) {
        const asked = (tag: string) => cluster!.requests.filter((request) => newTags(request).includes(tag)).length;
        expect(asked(`kill${round}-m1`)).toBe(2);
        expect(asked(`kill${round}-m2`)).toBe(1);
        const threadId = threads[round]!;
        const replies = await repliesStored(cluster, threadId);
        expect(replies).toHaveLength(2);
        const survivor = round % 2 === 0 ? 'b' : 'a';
        expect(replies[0]).toBe(`answer to kill${round}-m1 by ${survivor}`);
        expect(replies[1]).toMatch(new RegExp(`^answer to kill${round}-m2 by `));
        // The next turn (through the restarted process) was shown the one reply to the first message, nothing more.
        expect(repliesShown(cluster.requests.find((request) => newTags(request).includes(`kill${round}-m2`))!)).toEqual([replies[0]]);
        expect(await queued(cluster, threadId)).toBe(0);
      }
    }, 180_000);

    it('SIGSTOP past the claim, then SIGCONT: the paused process stores and sends nothing for that turn, and keeps serving', async () => {
      const wait = gate();
      let heldOnce = false;
      cluster = await startCluster({
        database,
        script: async (_call, request) => {
          const tags = newTags(request);
          if (tags.includes('p-m2') && !heldOnce) {
            heldOnce = true;
            await wait.opened;
          }
          return { text: `answer to ${tags.join('+')} by ${request.via}` };
        },
      });
      const a = cluster.process('a');
      const b = cluster.process('b');
      const cookie = await newVisitor(a.url);
      const threadId = `p-${Date.now().toString(36)}`;
      // The conversation has a reply before (a's caches know it). On a starved machine b may run that turn once a's
      // claim has run out: by design, and beside the point here.
      const first = (await postRun(a.url, cookie, webRun(threadId, 'p-m1 hello'))).text;
      expect(first).toMatch(/^answer to p-m1 by [ab]$/);

      const run: WebRun = webRun(threadId, 'p-m2 where is my parcel?');
      const leave = new AbortController();
      const onA = postRun(a.url, cookie, run, leave.signal).catch((error: unknown) => error);
      await expect
        .poll(() => cluster!.requests.some((request) => request.via === 'a' && newTags(request).includes('p-m2')), { timeout: 15_000, interval: 10 })
        .toBe(true);
      a.pause();
      const pausedAt = performance.now();
      // The visitor gives up on a and retries through the load balancer, which now sends it to b.
      leave.abort();
      await onA;
      const retried = await postRun(b.url, cookie, run);
      expect(retried.text).toBe('answer to p-m2 by b');
      expect(await repliesStored(cluster, threadId)).toEqual([first, 'answer to p-m2 by b']);

      // a sleeps well past its claim, then wakes up to the model's answer to its old request.
      await sleep(Math.max(0, pausedAt + LEASE_MS + 1_000 - performance.now()));
      wait.open();
      a.resume();
      // a goes on serving: a new conversation through it is answered by it...
      const other = await postRun(a.url, cookie, webRun(`q-${Date.now().toString(36)}`, 'q-m1 a new question'));
      expect(other.text).toBe('answer to q-m1 by a');
      // ...and so is the next message of this conversation, whose history holds b's reply and no reply of a's old turn.
      const next = await postRun(a.url, cookie, webRun(threadId, 'p-m3 thanks!'));
      expect(next.finished).toBe('completed');
      const last = cluster.requests.findLast((request) => newTags(request).includes('p-m3'))!;
      expect(repliesShown(last)).toEqual([first, 'answer to p-m2 by b']);

      // The paused process's turn stored nothing: one reply per message, p-m2's by b; a asked the model for p-m2 once.
      expect((await repliesStored(cluster, threadId)).filter((reply) => !reply.startsWith('answer to p-m3'))).toEqual([first, 'answer to p-m2 by b']);
      expect(
        cluster.requests
          .filter((request) => newTags(request).includes('p-m2'))
          .map((request) => request.via)
          .sort(),
      ).toEqual(['a', 'b']);
      expect(await queued(cluster, threadId)).toBe(0);
      // Nothing of a's old turn shows in the conversation the visitor reads.
      const transcript = (await fetch(`${b.url}/conversations/messages?id=${encodeURIComponent(threadId)}`, { headers: { cookie } }).then((response) =>
        response.json(),
      )) as { messages: Array<{ role: string; text: string }> };
      expect(transcript.messages.filter((message) => message.role === 'assistant').map((message) => message.text)).toEqual([
        first,
        'answer to p-m2 by b',
        next.text,
      ]);
    }, 120_000);
  });
}
