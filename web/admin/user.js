// One person: their accounts, phone, role and profile, their conversations, and the identity audit.
import { get, query } from './api.js';
import { badge, h, money, note, when } from './dom.js';

/** Shows `#/users/<userId>`. */
export function userView(root, userId, { showError }) {
  let closed = false;
  root.replaceChildren(note('Loading…'));

  async function load() {
    try {
      const [view, events, conversations] = await Promise.all([
        get(`/admin/users/${encodeURIComponent(userId)}`),
        get(`/admin/users/${encodeURIComponent(userId)}/events${query({ limit: 100 })}`),
        get(`/admin/conversations${query({ userId, limit: 50 })}`).catch(() => ({ conversations: [] })),
      ]);
      if (!closed) render(view, events.events, conversations.conversations);
    } catch (error) {
      if (!closed) root.replaceChildren(note(error.message));
      showError(error.message);
    }
  }

  function render({ user, accounts, role, profile, profileStored, profileProblem }, events, conversations) {
    root.replaceChildren(
      h(
        'div',
        { className: 'page', testid: 'user-page' },
        h('a', { href: '#/conversations', className: 'back' }, '← Conversations'),
        h('h2', { testid: 'user-name' }, user.displayName ?? user.id),
        h(
          'dl',
          { className: 'facts' },
          h('dt', {}, 'User id'),
          h('dd', {}, h('code', {}, user.id)),
          h('dt', {}, 'Phone'),
          h('dd', { testid: 'user-phone' }, user.phone ? `+${user.phone}` : '—'),
          h('dt', {}, 'Role'),
          h('dd', { testid: 'user-role' }, role ?? 'none'),
          h('dt', {}, 'Since'),
          h('dd', {}, when(user.createdAt)),
        ),
        h('h3', {}, 'Accounts'),
        table(
          ['Channel', 'Account', 'Linked'],
          accounts.map((account) => [account.channel, h('code', {}, account.accountId), when(account.createdAt)]),
          'user-accounts',
        ),
        h('h3', {}, 'Conversations'),
        conversations.length === 0
          ? note('None.')
          : table(
              ['Channel', 'Last message', 'Status', 'Cost'],
              conversations.map((conversation) => [
                conversation.channel,
                h(
                  'a',
                  { href: `#/conversations/${encodeURIComponent(conversation.sessionId)}` },
                  conversation.lastMessage?.text ?? conversation.title ?? conversation.conversationId,
                ),
                [badge(conversation.status), conversation.paused ? badge('paused', 'warn') : null],
                money(conversation.cost, conversation.currency),
              ]),
            ),
        h('h3', {}, 'Profile', profileStored ? '' : ' (defaults, nothing stored yet)'),
        profileProblem ? note(`The stored profile cannot be fully read; the defaults stand in: ${profileProblem}`) : null,
        h('pre', { className: 'json', testid: 'user-profile' }, JSON.stringify(profile, null, 2)),
        h('h3', {}, 'Identity audit'),
        events.length === 0
          ? note('No identity events.')
          : table(
              ['When', 'What', 'Actor', 'Details'],
              events.map((event) => [
                when(event.createdAt),
                event.kind,
                event.actor,
                h(
                  'code',
                  {},
                  [event.channel, event.accountId].filter(Boolean).join(':'),
                  Object.keys(event.details ?? {}).length ? ` ${JSON.stringify(event.details)}` : '',
                ),
              ]),
              'user-events',
            ),
      ),
    );
  }

  void load();
  return {
    refresh: () => void load(),
    close: () => (closed = true),
  };
}

/** A table from header names and rows of cells (strings or nodes). */
export function table(headers, rows, testid) {
  return h(
    'div',
    { className: 'table-wrap' },
    h(
      'table',
      { testid },
      h('thead', {}, h('tr', {}, ...headers.map((header) => h('th', {}, header)))),
      h('tbody', {}, ...rows.map((row) => h('tr', {}, ...row.map((cell, index) => h('td', { attrs: { 'data-label': headers[index] } }, cell))))),
    ),
  );
}
