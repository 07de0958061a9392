import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { salonScript } from '../../src/demo/salon-script.js';
import { createSalonTools, type SalonTools } from '../../src/demo/salon-tools.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
let salon: SalonTools | undefined;
afterEach(async () => {
  await harness?.close();
  salon?.close();
  harness = undefined;
  salon = undefined;
});

const example = JSON.parse(readFileSync(join(import.meta.dirname, '../../examples/salon/salon.config.json'), 'utf8')) as Record<string, unknown>;

describe('the salon example', () => {
  it('views, cancels and moves appointments by the ids in focus, each person only their own, then answers an empty list without the model', async () => {
    harness = await createHarness(salonScript);
    salon = createSalonTools({ file: join(harness.dir, 'salon', 'salon.db'), now: () => new Date('2026-11-24T09:00:00Z') });
    const palaver = await harness.start(example, { tools: salon.tools });
    const say = async (userId: string, text: string) => (await palaver.chat({ userId, text })).text;

    expect(await say('alice', 'Show my appointments')).toBe(
      'Your appointments:\n• Haircut with Anna, 2026-11-26 10:00\n• Manicure with Olga, 2026-11-29 15:30',
    );
    expect(await say('bob', 'show my appointments')).toContain('Haircut with Anna, 2026-11-26 10:00');
    // A cancellation is asked first, naming the appointment; nothing is cancelled until the person says yes.
    const question = await say('alice', 'cancel the haircut');
    expect(question).toContain('Cancel your Haircut with Anna on 2026-11-26 10:00');
    expect(await say('alice', 'show my appointments')).toContain('I did not understand');
    expect(await say('alice', 'yes')).toMatch(/^Appointment \d+ is cancelled\.$/);
    expect(await say('alice', 'move the manicure to 2026-12-10 12:00')).toMatch(/is moved to 2026-12-10 12:00/);
    expect(await say('alice', 'show my appointments')).toBe('Your appointments:\n• Manicure with Olga, 2026-12-10 12:00');
    // Bob's appointments are untouched by Alice's changes.
    expect(await say('bob', 'show my appointments')).toBe('Your appointments:\n• Haircut with Anna, 2026-11-26 10:00\n• Manicure with Olga, 2026-11-29 15:30');

    await say('alice', 'cancel the manicure');
    expect(await say('alice', 'no')).toContain('Declined by the person');
    await say('alice', 'cancel the manicure');
    await say('alice', 'да');
    const calls = harness.model.calls.length;
    expect(await say('alice', 'show my appointments')).toBe('You have nothing booked right now.');
    expect(harness.model.calls.length).toBe(calls);
  });
});
