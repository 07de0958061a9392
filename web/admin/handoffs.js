// Conversations handed to a person: the count in the top bar (with a chime when a new one arrives while the page is
// open), and the "Waiting for a person" list with a Take button on each.
import { get } from './api.js';
import { chime } from './chime.js';
import { badge, h, note, when } from './dom.js';
import { takeConversation, takeRefusal } from './take.js';

/** Who asked for a person, as operators read it. */
export const SOURCE_LABEL = { model: 'the agent asked', tool: 'a tool asked', phrase: 'the person asked' };

/**
 * Keeps the count of conversations waiting for a person in `counter` (hidden at 0) and chimes when one arrives that
 * the page had not seen (not on the first load: a reload is no news). `refresh()` on every `changed`.
 */
export function watchHandoffs(counter, { showError }) {
  let known = null;
  let closed = false;

  async function refresh() {
    let answer;
    try {
      answer = await get('/admin/handoffs');
    } catch (error) {
      // An older server has no such route: no count, and nothing to say about it.
      if (error.status !== 404) showError(error.message);
      return;
    }
    if (closed) return;
    counter.textContent = String(answer.waiting);
    counter.hidden = answer.waiting === 0;
    counter.title = `${answer.waiting} waiting for a person`;
    const waiting = answer.handoffs.filter((handoff) => handoff.takenBy === null).map((handoff) => handoff.id);
    const arrived = known !== null && waiting.some((id) => !known.has(id));
    known = new Set(waiting);
    if (arrived) void chime();
  }

  void refresh();
  return {
    refresh,
    close() {
      closed = true;
    },
  };
}

/** Shows `#/handoffs`: who waits for a person, oldest first, then the conversations operators took. */
export function handoffsView(root, _id, { showError, onTaken }) {
  let closed = false;
  const list = h('ul', { className: 'handoff-list', testid: 'handoff-list' });
  root.replaceChildren(h('div', { className: 'page', testid: 'handoffs-page' }, h('h2', {}, 'Waiting for a person'), list));
  list.replaceChildren(h('li', {}, note('Loading…')));

  async function load() {
    try {
      const answer = await get('/admin/handoffs');
      if (!closed) render(answer.handoffs);
    } catch (error) {
      if (!closed) list.replaceChildren(h('li', {}, note(error.message)));
    }
  }

  function render(handoffs) {
    if (handoffs.length === 0) return list.replaceChildren(h('li', {}, note('Nobody is waiting for a person.', 'no-handoffs')));
    list.replaceChildren(...handoffs.map(renderHandoff));
  }

  function renderHandoff(handoff) {
    const conversation = `#/conversations/${encodeURIComponent(handoff.sessionId)}`;
    const take = h(
      'button',
      { type: 'button', testid: 'take-button', disabled: handoff.takenBy !== null, on: { click: () => void takeIt(handoff, take) } },
      'Take',
    );
    return h(
      'li',
      { className: handoff.takenBy === null ? 'handoff' : 'handoff taken', testid: 'handoff-row', data: { sessionId: handoff.sessionId } },
      h(
        'div',
        { className: 'row-top' },
        h('a', { href: conversation, className: 'who', testid: 'handoff-person' }, handoff.person.name ?? handoff.title ?? handoff.person.id),
        handoff.channel ? badge(handoff.channel, 'channel') : null,
        h('span', { className: 'at', title: handoff.requestedAt }, when(handoff.requestedAt)),
      ),
      h('p', { className: 'reason', testid: 'handoff-reason' }, handoff.reason),
      h(
        'div',
        { className: 'row-bottom' },
        h('span', { className: 'meta' }, SOURCE_LABEL[handoff.source] ?? handoff.source),
        handoff.takenBy === null ? badge('waiting', 'warn', 'handoff-waiting') : badge(`taken by ${handoff.takenBy}`, 'info', 'handoff-taken'),
        take,
      ),
    );
  }

  async function takeIt(handoff, button) {
    button.disabled = true;
    try {
      await takeConversation(handoff.sessionId);
      onTaken?.();
      await load();
    } catch (error) {
      button.disabled = false;
      showError(takeRefusal(error));
      // Another operator was quicker: the list shows who.
      await load();
    }
  }

  void load();
  return {
    refresh: () => void load(),
    close() {
      closed = true;
    },
  };
}
