// Local tools for the tool-worker tests, loaded by spawned `palaver worker` processes through `agent.toolsModule`.
// Each records what it does in the file its arguments name, one line per event, so the test (another process) can
// count starts and side effects per idempotency key.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
// From the package, as a team's tools module imports it: the worker runs the built Palaver, and on Node 22.18+ it
// loads this file by stripping its types, which maps no `.js` import to a `.ts` source.
import { defineTool } from 'palaver';

const record = (file: string, line: string) => appendFileSync(file, `${line}\n`);
const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

export const tools = [
  defineTool({
    name: 'book',
    description: 'Makes a booking (a side effect) and says so. With holdFirst, the first run of a call never finishes.',
    label: { en: 'Booking your table…', uk: 'Бронюю столик…' },
    input: z.object({ file: z.string(), what: z.string(), holdFirst: z.boolean().optional() }),
    async run({ file, what, holdFirst }, ctx) {
      const firstStart = !lines(file).includes(`start ${ctx.idempotencyKey}`);
      record(file, `start ${ctx.idempotencyKey}`);
      // Cut off here: the test kills this worker while the call waits, before its side effect.
      if (holdFirst && firstStart) await new Promise(() => undefined);
      record(file, `effect ${ctx.idempotencyKey} ${what} for ${ctx.userId}`);
      ctx.setFlowState('booking', { what });
      return `Booked ${what} for ${ctx.userId}`;
    },
  }),
  defineTool({
    name: 'crash',
    description: 'Kills the worker that runs it (a call no worker can finish).',
    input: z.object({ file: z.string() }),
    run({ file }, ctx) {
      record(file, `start ${ctx.idempotencyKey}`);
      process.kill(process.pid, 'SIGKILL');
      return new Promise(() => undefined);
    },
  }),
  defineTool({
    name: 'slow',
    description: 'Answers after the given milliseconds.',
    input: z.object({ file: z.string(), ms: z.number().int().min(0) }),
    async run({ file, ms }, ctx) {
      record(file, `start ${ctx.idempotencyKey}`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      record(file, `effect ${ctx.idempotencyKey}`);
      return `Slept ${ms} ms`;
    },
  }),
  defineTool({
    name: 'repeat',
    description: 'Returns one character repeated (a result of any size).',
    input: z.object({ char: z.string().length(1), times: z.number().int().min(0) }),
    run: ({ char, times }) => char.repeat(times),
  }),
  defineTool({
    name: 'echo',
    description: 'Returns its text.',
    input: z.object({ text: z.string() }),
    run: ({ text }) => text,
  }),
];
