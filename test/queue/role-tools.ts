// Local tools for the forged-result tests, loaded by a spawned `palaver worker` through `agent.toolsModule`: one that
// changes the person's role from the worker (ctx.setRole, sent back as the result's role effect), one that only
// answers.
import { z } from 'zod';
// From the package, as a team's tools module imports it: the worker runs the built Palaver, and on Node 22.18+ it
// loads this file by stripping its types, which maps no `.js` import to a `.ts` source.
import { defineTool } from 'palaver';

export const tools = [
  defineTool({
    name: 'become',
    description: 'Changes the role of the person it acts for.',
    input: z.object({ role: z.string() }),
    run: ({ role }, ctx) => {
      ctx.setRole(role);
      return `You are ${role} now`;
    },
  }),
  defineTool({
    name: 'echo',
    description: 'Returns its text.',
    input: z.object({ text: z.string() }),
    run: ({ text }) => text,
  }),
];
