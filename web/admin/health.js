// Is it keeping up: the inbox and outbox, the tool stream, turns running now, and latency and failures.
import { get } from './api.js';
import { h, note, when } from './dom.js';
import { table } from './user.js';

/** Shows `#/health`. */
export function healthView(root, _id, { showError }) {
  let closed = false;
  root.replaceChildren(note('Loading…'));

  async function load() {
    try {
      const [overview, live, metrics] = await Promise.all([get('/admin/overview'), get('/admin/turns/live'), get('/admin/metrics/summary').catch(() => null)]);
      if (!closed) render(overview, live.turns, metrics);
    } catch (error) {
      if (!closed) root.replaceChildren(note(error.message));
      showError(error.message);
    }
  }

  function render(overview, turns, metrics) {
    const stream = overview.toolStream;
    root.replaceChildren(
      h(
        'div',
        { className: 'page', testid: 'health-page' },
        h('h2', {}, 'Health'),
        h(
          'div',
          { className: 'tiles' },
          tile('Inbox waiting', overview.inbox.waiting, 'inbox-waiting'),
          tile('Turns running', overview.inbox.running, 'inbox-running'),
          tile('Held by a pause', overview.inbox.paused, 'inbox-paused'),
          tile('Outbox pending', overview.outbox.pending, 'outbox-pending'),
          tile('Outbox failed', overview.outbox.failed, 'outbox-failed', overview.outbox.failed > 0),
          stream ? tile('Tool stream backlog', stream.backlog, 'stream-backlog') : null,
          stream ? tile('Tool dead letters', stream.deadLetters, 'stream-dead-letters', stream.deadLetters > 0) : null,
        ),
        stream ? null : note('Tools run inline (no Redis tool stream).'),
        h('h3', {}, 'Turns now'),
        turns.length === 0
          ? note('Nothing running or waiting.', 'no-live-turns')
          : table(
              ['Conversation', 'Channel', 'State', 'Messages', 'Oldest'],
              turns.map((turn) => [
                h('a', { href: `#/conversations/${encodeURIComponent(turn.sessionId)}` }, turn.conversationId),
                turn.channel,
                turn.state,
                String(turn.messages),
                when(turn.oldestAt),
              ]),
              'live-turns',
            ),
        h('h3', {}, 'Latency (this process, since it started)'),
        metrics && metrics.latencies.length
          ? table(
              ['Measure', 'Calls', 'Mean', 'p50 ≤', 'p95 ≤'],
              metrics.latencies.map((row) => [label(row), String(row.count), ms(row.meanMs), ms(row.p50Ms), ms(row.p95Ms)]),
              'latency-table',
            )
          : note('No turns measured yet.'),
        h('h3', {}, 'Outcomes and failures'),
        metrics && metrics.outcomes.length
          ? table(
              ['Counter', 'Count'],
              metrics.outcomes.map((row) => [label(row), String(row.value)]),
              'outcome-table',
            )
          : note('Nothing counted yet.'),
      ),
    );
  }

  void load();
  return { refresh: () => void load(), close: () => (closed = true) };
}

function tile(name, value, testid, alarming = false) {
  return h(
    'div',
    { className: alarming ? 'tile alarm' : 'tile', testid },
    h('span', { className: 'tile-value' }, String(value)),
    h('span', { className: 'tile-name' }, name),
  );
}

function label(row) {
  const labels = Object.entries(row.labels).map(([key, value]) => `${key}=${value}`);
  return h('span', { title: row.help }, row.metric.replace(/^palaver_/, ''), labels.length ? h('span', { className: 'meta' }, ` ${labels.join(' ')}`) : null);
}

function ms(value) {
  return value === null ? '—' : value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value} ms`;
}
