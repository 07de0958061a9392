import { describe, expect, it } from 'vitest';
import { DueSchedule, type Scheduled } from '../../src/runtime/due-schedule.js';

const entry = (name: string): Scheduled & { name: string } => ({ name, due: 0, slot: -1, order: 0 });

/** Takes every entry out, first due first. */
function drain<T extends Scheduled & { name: string }>(schedule: DueSchedule<T>): string[] {
  const names: string[] = [];
  for (let first = schedule.first; first !== undefined; first = schedule.first) {
    schedule.remove(first);
    names.push(first.name);
  }
  return names;
}

describe('DueSchedule', () => {
  it('hands out entries by when they are due, those due together in the order they were added', () => {
    const schedule = new DueSchedule<ReturnType<typeof entry>>();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(entry);
    schedule.add(a!, 30);
    schedule.add(b!, 10);
    schedule.add(c!, 30);
    schedule.add(d!, 20);
    expect(drain(schedule)).toEqual(['b', 'd', 'a', 'c']);
  });

  it('moves an entry added again and forgets one removed, wherever it sits', () => {
    const schedule = new DueSchedule<ReturnType<typeof entry>>();
    const entries = Array.from({ length: 200 }, (_, i) => entry(`e${i}`));
    entries.forEach((e, i) => schedule.add(e, (i * 7919) % 1000));
    // Every third entry moves to the end, every fifth leaves.
    entries.forEach((e, i) => {
      if (i % 3 === 0) schedule.add(e, 2000 + i);
      if (i % 5 === 0) schedule.remove(e);
    });
    const kept = entries.filter((_, i) => i % 5 !== 0);
    const expected = [...kept].sort((x, y) => x.due - y.due || x.order - y.order).map((e) => e.name);
    expect(drain(schedule)).toEqual(expected);
    expect(entries.every((e) => e.slot === -1)).toBe(true);
  });
});
