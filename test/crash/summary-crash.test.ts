import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelInputItem } from '../../src/domain/ports/model-provider.js';
import type { Store } from '../../src/domain/ports/store.js';
import { SUMMARY_HEADING } from '../../src/runtime/context/summary-prompt.js';
import { openStore } from '../../src/store/open-store.js';
import { startScriptedModelServer, type ScriptedCall, type ScriptedModelServer } from '../../src/testing/index.js';
import { cleanEnv, killAll, REPO_ROOT, spawnNode, type RunningChild } from '../cli/child-process.js';

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const LEASE_MS = 600;

let model: ScriptedModelServer | undefined;
let store: Store | undefined;
afterEach(async () => {
  await killAll();
  await store?.close();
  await model?.close();
  store = model = undefined;
});

const isSummaryCall = (call: ScriptedCall) => call.instructions.includes('You keep the memory of a long conversation');
const textOf = (items: readonly ModelInputItem[]) => items.map((item) => (item.type === 'message' ? item.content : '')).join('\n');

describe('a Palaver killed while it writes a summary', () => {
  it('leaves no summary behind; the next process answers without one and then writes it, once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-summary-crash-'));
    mkdirSync(join(dir, 'instructions'));
    writeFileSync(join(dir, 'instructions', 'base.md'), 'You are a test agent.');
    let summaryCalls = 0;
    model = await startScriptedModelServer({
      script: async (call) => {
        if (!isSummaryCall(call)) return { text: 'Noted.' };
        // The first process dies while its summary call is under way; it never gets the answer.
        if ((summaryCalls += 1) === 1) await new Promise((resolve) => setTimeout(resolve, 30_000));
        return { text: 'Ann Smith; door code 4711.' };
      },
    });
    const databaseUrl = `sqlite:${join(dir, 'palaver.db')}`;
    const agent = { historyLimit: 50, memory: { summarize: { afterTokens: 40, keepRecentMessages: 2 } } };
    const args = [JSON.stringify({ databaseUrl, modelUrl: model.baseUrl, instructionsDir: join(dir, 'instructions'), leaseMs: LEASE_MS, agent })];
    const start = async (): Promise<RunningChild> => {
      const child = spawnNode(CHILD, args, { cwd: REPO_ROOT, env: cleanEnv() });
      await child.waitForOutput(/^ready$/m, 20_000);
      return child;
    };
    const turnCalls = () => model!.calls.filter((call) => !isSummaryCall(call));
    const say = async (child: RunningChild, text: string) => {
      const before = turnCalls().length;
      child.process.stdin.write(`${text}\n`);
      await expect.poll(() => turnCalls().length, { timeout: 10_000 }).toBe(before + 1);
    };

    const first = await start();
    await say(first, 'Please remember: my door code is 4711 and my name is Ann Smith.');
    await say(first, 'What time do you open?');
    await say(first, 'And on Sundays?');
    await expect.poll(() => summaryCalls, { timeout: 10_000 }).toBe(1);
    expect((await first.stop('SIGKILL')).signal).toBe('SIGKILL');

    store = await openStore(databaseUrl, { migrate: false });
    const user = await store.users.findByAccount('chat', 'crash-tester');
    const [session] = await store.sessions.listByUser(user!.id);
    expect(await store.summaries.latest(session!.id)).toBeUndefined();

    // Its heartbeat is two leases old when the next process starts: that one retires it, and its claim with it.
    await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS + 300));
    const second = await start();
    await say(second, 'Is parking free?');
    expect(textOf(turnCalls().at(-1)!.messages)).not.toContain(SUMMARY_HEADING);
    await expect.poll(() => store!.summaries.latest(session!.id), { timeout: 10_000 }).toMatchObject({ version: 1, text: 'Ann Smith; door code 4711.' });
    await say(second, 'Thanks!');
    expect(turnCalls().at(-1)!.messages[0]).toMatchObject({ role: 'user', content: `${SUMMARY_HEADING}\nAnn Smith; door code 4711.` });
    expect(summaryCalls).toBe(2);
    await second.stop('SIGTERM');
  });
});
