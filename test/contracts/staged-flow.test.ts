import { createStagedFlow } from '../../src/runtime/flows/staged-flow.js';
import { flowContract, type FlowScript } from './flow-contract.js';

const task = JSON.stringify({ direct: false, answer: null, intent: 'answer the person', details: 'none' });
const report = JSON.stringify({ status: 'done', summary: 'looked it up', facts: [] });

/**
 * The staged flow's model: the intent stage hands over a task, execution calls the tools and reports, and the
 * organization stage writes the reply as JSON, streamed in pieces of that JSON.
 */
const stagedScript: FlowScript = {
  answer: (text, deltas) => [{ text: task }, { text: report }, organization(text, deltas)],
  toolsThenAnswer: (calls, text) => [{ text: task }, { toolCalls: [...calls] }, { text: report }, organization(text)],
};

function organization(reply: string, deltas?: readonly string[]): { text: string; deltas?: readonly string[] } {
  const text = JSON.stringify({ reply });
  if (!deltas) return { text };
  // The JSON around the reply, cut where the reply's own deltas are cut.
  const pieces = [
    `{"reply":${JSON.stringify(deltas[0]).slice(0, -1)}`,
    ...deltas.slice(1, -1).map((delta) => JSON.stringify(delta).slice(1, -1)),
    `${JSON.stringify(deltas.at(-1)).slice(1)}}`,
  ];
  return { text, deltas: deltas.length === 1 ? [text] : pieces };
}

flowContract(
  'staged',
  createStagedFlow({ models: { intent: 'intent-model', execution: 'execution-model', organization: 'organization-model' } }),
  stagedScript,
);
