import { z } from 'zod';
import { defineTool, type LocalTool } from '../tools/define-tool.js';

const NOTES = 'demo.notes';

/**
 * The demo agent's tools. Notes live in the user's flow state, so they are stored with the user and survive
 * a restart without a table of their own.
 */
export function createDemoTools(options: { timeZone: string; now?: () => Date }): LocalTool[] {
  const now = options.now ?? (() => new Date());
  return [
    defineTool({
      name: 'current_time',
      description: "Tells the current date and time in the person's time zone.",
      label: { en: 'Checking the time…', ru: 'Смотрю, который час…', uk: 'Дивлюся, котра година…', zh: '正在查看时间…' },
      input: z.object({}),
      run: () =>
        new Intl.DateTimeFormat('en-GB', { timeZone: options.timeZone, dateStyle: 'full', timeStyle: 'short' }).format(now()) + ` (${options.timeZone})`,
    }),
    defineTool({
      name: 'save_note',
      description: 'Saves a short note for the person.',
      label: { en: 'Saving your note…', ru: 'Сохраняю заметку…', uk: 'Зберігаю нотатку…', zh: '正在保存笔记…' },
      input: z.object({ text: z.string().min(1).max(500).describe('The note to save') }),
      run: ({ text }, ctx) => {
        const notes = readNotes(ctx.getFlowState(NOTES));
        ctx.setFlowState(NOTES, [...notes, text].slice(-20));
        return `Saved note #${notes.length + 1}: ${text}`;
      },
    }),
    defineTool({
      name: 'list_notes',
      description: "Lists the person's saved notes.",
      label: { en: 'Looking at your notes…', ru: 'Смотрю ваши заметки…', uk: 'Дивлюся ваші нотатки…', zh: '正在查看你的笔记…' },
      input: z.object({}),
      run: (_args, ctx) => {
        const notes = readNotes(ctx.getFlowState(NOTES));
        return notes.length === 0 ? 'No notes saved yet.' : notes.map((note, index) => `${index + 1}. ${note}`).join('\n');
      },
    }),
  ];
}

function readNotes(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((note): note is string => typeof note === 'string') : [];
}
