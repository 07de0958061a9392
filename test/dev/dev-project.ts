import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../cli/child-process.js';

/** A project as `palaver init` makes it, on the offline model whose rules call `opening_hours`, in a temporary folder. */
export interface DevProject {
  readonly dir: string;
  write(file: string, text: string): void;
  remove(): void;
}

/** `opening_hours` answering `hours`: a tools module in TypeScript, as the scaffold has it. */
export function toolsModule(hours: string): string {
  return `import { z } from 'zod';
export const tools = [
  {
    name: 'opening_hours',
    description: 'Opening hours of a day',
    input: z.object({ day: z.string() }),
    readOnly: true,
    run: ({ day }: { day: string }) => \`\${day}: ${hours}\`,
  },
];
`;
}

export function createDevProject(): DevProject {
  const dir = mkdtempSync(join(tmpdir(), 'palaver-dev-'));
  // The tools module imports zod as a project's would: from its node_modules.
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const write = (file: string, text: string) => {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    writeFileSync(join(dir, file), text);
  };
  write(
    'palaver.config.yaml',
    `agent:
  name: Dev test
  instructionsDir: instructions
  toolsModule: tools/index.ts
  defaultRole: guest
roles:
  definitions:
    guest: { tools: [opening_hours] }
model:
  provider: scripted
  name: scripted
  script: model-replies.yaml
database:
  url: sqlite:data/palaver.db
channels:
  web: { enabled: true }
log:
  level: error
`,
  );
  write(
    'model-replies.yaml',
    `rules:
  - when: open .*?(?<day>monday|saturday)
    tool: opening_hours
    arguments: { day: "{{day | lower}}" }
    reply: "We are open {{result}}."
otherwise: 'You said: "{{text}}"'
`,
  );
  write('instructions/base.md', 'You are the first version of the agent.\n');
  write('instructions/guest.md', 'The person is a guest.\n');
  write('tools/index.ts', toolsModule('9:00-17:00'));
  return { dir, write, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
