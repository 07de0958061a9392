import { describe, expect, it } from 'vitest';
import {
  FocusError,
  FocusKeeper,
  MemoryFocusStore,
  focusIsEmpty,
  hiddenFocusBlock,
  type FocusEntityType,
  type FocusSnapshot,
} from '../../../src/runtime/context/focus.js';

const appointment: FocusEntityType = {
  type: 'appointment',
  loadTool: 'get_my_appointments',
  ttlMs: 60_000,
  refreshAfter: ['cancel_appointment_by_id', 'book'],
  idArguments: { cancel_appointment_by_id: ['appointment_id'], move: ['appointment_id'] },
};
const pet: FocusEntityType = {
  type: 'pet',
  loadTool: 'get_my_pets',
  ttlMs: 60_000,
  refreshAfter: ['add_pet'],
  idArguments: { book: ['pet_id'], move: ['pet_id'] },
};

// Focus belongs to a (conversation, person) pair.
const s1 = { sessionId: 's1', userId: 'ann' };
const s2 = { sessionId: 's2', userId: 'ann' };

const haircut = { id: 7, description: 'Haircut with Anna, 2026-12-01 10:00' };
const rex = { id: 'rex-1', description: 'Rex, a beagle' };

const call = (name: string, args: unknown) => ({ callId: 'c1', name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });
const snapshot = (entityType: string, entities: FocusSnapshot['entities']): FocusSnapshot => ({ entityType, entities, loadedAt: 0 });

function keeperWith(types: readonly FocusEntityType[] = [appointment, pet]) {
  const store = new MemoryFocusStore();
  const loads: string[] = [];
  const keeper = new FocusKeeper(types, store, () => 5_000);
  const loader = async (tool: string) => {
    loads.push(tool);
    return { content: JSON.stringify(tool === 'get_my_pets' ? [rex] : [haircut]), isError: false };
  };
  return { store, keeper, loader, loads };
}

describe('loading focus', () => {
  it('loads each needed type with its own tool, stamps it with the time, and keeps sessions apart', async () => {
    const { keeper, loader, loads, store } = keeperWith();
    const focus = await keeper.load(s1, ['appointment', 'pet'], loader);
    expect(focus).toEqual([
      { entityType: 'appointment', entities: [haircut], loadedAt: 5_000 },
      { entityType: 'pet', entities: [rex], loadedAt: 5_000 },
    ]);
    expect(loads).toEqual(['get_my_appointments', 'get_my_pets']);
    expect(await store.get(s2, 'appointment')).toBeUndefined();
    await keeper.load(s2, ['pet'], loader);
    expect(loads).toEqual(['get_my_appointments', 'get_my_pets', 'get_my_pets']);
  });

  it('answers from the store while the focus is younger than its TTL', async () => {
    let now = 1_000;
    const keeper = new FocusKeeper([appointment], new MemoryFocusStore(), () => now);
    const first = await keeper.load(s1, ['appointment'], async () => ({ content: JSON.stringify([haircut]), isError: false }));
    now += 30_000;
    const again = await keeper.load(s1, ['appointment'], async () => ({ content: '[]', isError: false }));
    expect(again).toEqual(first);
    expect(again).toEqual([{ entityType: 'appointment', entities: [haircut], loadedAt: 1_000 }]);
  });

  it('forgets only the types a successful tool changes', async () => {
    const { keeper, loader, store } = keeperWith();
    await keeper.load(s1, ['appointment', 'pet'], loader);
    await keeper.afterTool(s1, 'book');
    expect(await store.get(s1, 'appointment')).toBeUndefined();
    expect(await store.get(s1, 'pet')).toMatchObject({ entities: [rex] });
  });

  it('fails clearly for an unconfigured type, a failing loader and output that is not a list of entities', async () => {
    const { keeper } = keeperWith();
    await expect(keeper.load(s1, ['invoice'], async () => ({ content: '[]', isError: false }))).rejects.toMatchObject({
      name: 'FocusError',
      message: 'No entity type "invoice" is configured for focus.',
    });
    await expect(keeper.load(s1, ['appointment'], async () => ({ content: 'calendar offline', isError: true }))).rejects.toThrow(
      new FocusError('Loading appointment with get_my_appointments failed: calendar offline'),
    );
    await expect(keeper.load(s1, ['appointment'], async () => ({ content: 'no', isError: false }))).rejects.toThrow(
      new FocusError('get_my_appointments must return a JSON array of {id, description} for appointment; it returned text that is not JSON.'),
    );
    await expect(keeper.load(s1, ['appointment'], async () => ({ content: '{"id":1}', isError: false }))).rejects.toThrow(
      /^get_my_appointments must return a JSON array of \{id, description\} for appointment: /,
    );
  });
});

describe('checking ids in tool calls', () => {
  const { keeper } = keeperWith();
  const focus = [snapshot('appointment', [haircut, { id: 9, description: 'Manicure' }]), snapshot('pet', [rex])];

  it('accepts ids in focus, whether the model writes them as numbers or strings', () => {
    expect(keeper.check(call('cancel_appointment_by_id', { appointment_id: 7 }), focus)).toBeUndefined();
    expect(keeper.check(call('cancel_appointment_by_id', { appointment_id: '9' }), focus)).toBeUndefined();
    expect(keeper.check(call('move', { appointment_id: 9, pet_id: 'rex-1' }), focus)).toBeUndefined();
  });

  it('refuses an id of any declared argument that is not in focus, saying which ids are', () => {
    expect(keeper.check(call('move', { appointment_id: 9, pet_id: 'tom' }), focus)).toEqual({
      isError: true,
      content:
        'Refused: pet_id="tom" is not the id of one of the person\'s pet in focus (ids in focus: rex-1). Take ids only from the hidden context block; do not guess them.',
    });
    expect(keeper.check(call('cancel_appointment_by_id', { appointment_id: 8 }), [])).toMatchObject({
      content: expect.stringContaining("appointment_id=8 is not the id of one of the person's appointment in focus (ids in focus: none)"),
    });
  });

  it('refuses an id of a type that could not be loaded with that reason, not as an invented id', () => {
    expect(keeper.check(call('move', { appointment_id: 9, pet_id: 'rex-1' }), focus.slice(0, 1), ['pet'])).toEqual({
      isError: true,
      content:
        'Refused: the person\'s pet could not be loaded just now, so pet_id="rex-1" cannot be checked. Tell the person it cannot be done at the moment; do not guess ids.',
    });
    expect(keeper.check(call('cancel_appointment_by_id', { appointment_id: 7 }), focus.slice(0, 1), ['pet'])).toBeUndefined();
  });

  it('leaves calls without such arguments, and malformed arguments, to the tools layer', () => {
    expect(keeper.check(call('book', { when: 'tomorrow' }), focus)).toBeUndefined();
    expect(keeper.check(call('cancel_appointment_by_id', '{not json'), focus)).toBeUndefined();
    expect(keeper.check(call('cancel_appointment_by_id', 'null'), focus)).toBeUndefined();
    expect(keeper.check(call('cancel_appointment_by_id', '42'), focus)).toBeUndefined();
  });
});

describe('the hidden block', () => {
  it('is empty without focus, and lists each type with its ids, or says it has none', () => {
    expect(hiddenFocusBlock([])).toBe('');
    expect(hiddenFocusBlock([snapshot('appointment', [haircut, { id: 9, description: 'Manicure' }]), snapshot('pet', [rex]), snapshot('invoice', [])])).toBe(
      [
        '## Hidden context (entities in focus; never show ids to the person)',
        'When a tool argument is the id of one of these entities, take the id from this list. Never ask the person for an id and never invent one.',
        '### appointment',
        '- id 7: "Haircut with Anna, 2026-12-01 10:00"',
        '- id 9: "Manicure"',
        '### pet',
        '- id "rex-1": "Rex, a beagle"',
        '### invoice',
        '(none)',
      ].join('\n'),
    );
  });

  it('names a type that could not be loaded, so the model neither says there are none nor invents ids', () => {
    expect(
      hiddenFocusBlock([snapshot('pet', [rex])], ['appointment'])
        .split('\n')
        .slice(2),
    ).toEqual([
      '### pet',
      '- id "rex-1": "Rex, a beagle"',
      '### appointment',
      '(could not be loaded just now: do not say the person has none, and do not act on one; say it cannot be seen at the moment)',
    ]);
    expect(hiddenFocusBlock([], ['appointment'])).toContain('### appointment\n(could not be loaded just now');
  });

  it('counts as empty only when something was loaded and every type came back empty', () => {
    expect(focusIsEmpty([])).toBe(false);
    expect(focusIsEmpty([snapshot('appointment', []), snapshot('pet', [])])).toBe(true);
    expect(focusIsEmpty([snapshot('appointment', []), snapshot('pet', [rex])])).toBe(false);
  });
});
