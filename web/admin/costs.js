// What the agent cost: per day and per person, as charts (Chart.js, served by this server) and tables.
import { get, query } from './api.js';
import { h, money, note } from './dom.js';
import { table } from './user.js';

const RANGES = { 7: 'Last 7 days', 30: 'Last 30 days', 90: 'Last 90 days' };

/** Shows `#/costs`. */
export function costsView(root, _id, { showError }) {
  let closed = false;
  let days = '30';
  const charts = [];
  const range = h(
    'select',
    { testid: 'cost-range', attrs: { 'aria-label': 'Period' } },
    ...Object.entries(RANGES).map(([value, label]) => h('option', { value }, label)),
  );
  range.value = days;
  range.addEventListener('change', () => {
    days = range.value;
    void load();
  });
  const totals = h('p', { className: 'totals', testid: 'cost-totals' });
  const dayCanvas = h('canvas', { testid: 'chart-cost-by-day', attrs: { 'aria-label': 'Cost per day', role: 'img' } });
  const userCanvas = h('canvas', { testid: 'chart-cost-by-user', attrs: { 'aria-label': 'Cost per person', role: 'img' } });
  const dayTable = h('div');
  const userTable = h('div');
  root.replaceChildren(
    h(
      'div',
      { className: 'page' },
      h('div', { className: 'page-head' }, h('h2', {}, 'Costs'), range),
      totals,
      h(
        'div',
        { className: 'charts' },
        h('section', { className: 'card' }, h('h3', {}, 'Per day'), h('div', { className: 'chart' }, dayCanvas), dayTable),
        h('section', { className: 'card' }, h('h3', {}, 'Per person'), h('div', { className: 'chart' }, userCanvas), userTable),
      ),
    ),
  );

  async function load() {
    const from = new Date(Date.now() - Number(days) * 86_400_000).toISOString().slice(0, 10);
    try {
      const [byDay, byUser] = await Promise.all([
        get(`/admin/costs${query({ by: 'day', from, limit: 1000 })}`),
        get(`/admin/costs${query({ by: 'user', from, limit: 20 })}`),
      ]);
      if (closed) return;
      totals.replaceChildren(
        'Total: ',
        ...(byDay.totals.length ? byDay.totals.flatMap((total, index) => [index ? ' + ' : '', money(total.cost, total.currency)]) : ['nothing yet']),
      );
      draw(
        0,
        dayCanvas,
        'bar',
        byDay.rows.map((row) => row.key),
        byDay.rows,
        false,
      );
      draw(
        1,
        userCanvas,
        'bar',
        byUser.rows.map((row) => row.label ?? row.key.slice(0, 8)),
        byUser.rows,
        true,
      );
      dayTable.replaceChildren(byDay.rows.length ? rowsTable('Day', byDay.rows) : note('No turns in this period.'));
      userTable.replaceChildren(
        byUser.rows.length
          ? rowsTable('Person', byUser.rows, (row) => h('a', { href: `#/users/${encodeURIComponent(row.key)}` }, row.label ?? row.key))
          : note('No turns in this period.'),
      );
    } catch (error) {
      showError(error.message);
    }
  }

  /** One dataset per currency: amounts in different currencies are never added up. */
  function draw(slot, canvas, type, labels, rows, horizontal) {
    charts[slot]?.destroy();
    if (typeof Chart === 'undefined') return;
    const keys = [...new Set(labels)];
    const currencies = [...new Set(rows.map((row) => row.currency))];
    const datasets = currencies.map((currency, index) => ({
      label: currency,
      data: keys.map((key) => rows.filter((row, i) => labels[i] === key && row.currency === currency).reduce((sum, row) => sum + Number(row.cost), 0)),
      backgroundColor: ['#2f6feb', '#d97706', '#059669', '#9333ea'][index % 4],
    }));
    charts[slot] = new Chart(canvas, {
      type,
      data: { labels: keys, datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        indexAxis: horizontal ? 'y' : 'x',
        plugins: { legend: { display: currencies.length > 1 } },
      },
    });
  }

  void load();
  return {
    refresh: () => void load(),
    close() {
      closed = true;
      for (const chart of charts) chart?.destroy();
    },
  };
}

function rowsTable(keyName, rows, keyCell = (row) => row.label ?? row.key) {
  return table(
    [keyName, 'Cost', 'Turns', 'Tokens in / out', 'Models'],
    rows.map((row) => [
      keyCell(row),
      money(row.cost, row.currency),
      String(row.turns),
      `${row.inputTokens} / ${row.outputTokens}`,
      row.models.map((model) => model.model).join(', '),
    ]),
  );
}
