// The conversation list (live), and one conversation: its transcript with the audit toggle, who took it and its
// open handoff, take, pause and resume (with a note for the agent), end, and a reply sent as the agent.
import { get, post, query } from './api.js';
import { badge, h, money, note, when } from './dom.js';
import { SOURCE_LABEL } from './handoffs.js';
import { takeConversation, takeRefusal, takenByText } from './take.js';

/** Shows `#/conversations[/<sessionId>]`. `me`: the signed-in operator's name (their own conversations read "Taken by you"). */
export function conversationsView(root, sessionId, { showError, me, onTaken }) {
  let filters = { q: '' };
  let conversations = [];
  let nextCursor = null;
  let audit = false;
  let summariesOpen = false;
  let closed = false;
  /** The key of the reply being typed: a retried send of the same text is stored once. */
  let sendKey = null;

  const search = h('input', {
    type: 'search',
    placeholder: 'Search people, channels, text',
    testid: 'conversation-search',
    attrs: { 'aria-label': 'Search conversations' },
  });
  const pausedOnly = h('input', { type: 'checkbox', testid: 'paused-only' });
  const list = h('ul', { className: 'conversation-list', testid: 'conversation-list' });
  const more = h('button', { type: 'button', className: 'quiet', hidden: true, on: { click: () => void loadList(true) } }, 'Load more');
  const detail = h('section', { className: 'detail-pane', testid: 'conversation-detail' });
  const split = h(
    'div',
    { className: sessionId ? 'split has-detail' : 'split' },
    h('section', { className: 'list-pane' }, h('div', { className: 'filters' }, search, h('label', { className: 'check' }, pausedOnly, ' paused')), list, more),
    detail,
  );
  root.replaceChildren(split);

  let searchTimer;
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      filters = { ...filters, q: search.value.trim() };
      void loadList();
    }, 250);
  });
  pausedOnly.addEventListener('change', () => {
    filters = { ...filters, paused: pausedOnly.checked ? 'true' : undefined };
    void loadList();
  });

  // The reply box is made once: a live refresh redraws the transcript around it, never what is being typed.
  const text = h('textarea', {
    rows: 3,
    placeholder: 'Reply as the agent…',
    testid: 'agent-text',
    attrs: { 'aria-label': 'Reply as the agent', maxlength: 16000 },
  });
  text.addEventListener('input', () => (sendKey = null));
  const sendButton = h('button', { type: 'submit', testid: 'agent-send' }, 'Send as agent');
  const sendStatus = h('span', { className: 'note', testid: 'agent-status', attrs: { 'aria-live': 'polite' } });
  const composer = h('form', { className: 'composer', testid: 'agent-form' }, text, h('div', { className: 'composer-bar' }, sendStatus, sendButton));
  composer.addEventListener('submit', async (event) => {
    event.preventDefault();
    const body = text.value.trim();
    if (!body) return;
    sendKey ??= crypto.randomUUID();
    sendButton.disabled = true;
    sendStatus.textContent = 'Sending…';
    try {
      const sent = await post(`/admin/conversations/${encodeURIComponent(sessionId)}/messages`, { text: body }, { 'idempotency-key': sendKey });
      text.value = '';
      sendKey = null;
      sendStatus.textContent = sent.parts > 1 ? `Sent in ${sent.parts} parts.` : 'Sent.';
      await loadDetail();
    } catch (error) {
      sendStatus.textContent = '';
      showError(error.message);
    } finally {
      sendButton.disabled = false;
    }
  });

  // Made once too, kept across live refreshes: why the last take was refused, and taking it over.
  const takeStatus = h('span', { className: 'note', testid: 'take-status', attrs: { 'aria-live': 'polite' } });
  const takeOver = h('button', { type: 'button', className: 'quiet', hidden: true, testid: 'take-over', on: { click: () => void takeOverFrom() } });

  // Handing back with a note: the note is for the agent's next turns; the person never sees it.
  const noteText = h('textarea', {
    rows: 3,
    placeholder: 'What the agent should know: what you did or promised. The person never sees this note.',
    testid: 'resume-note',
    attrs: { 'aria-label': 'Note for the agent', maxlength: 4000 },
  });
  const noteSubmit = h('button', { type: 'submit', testid: 'resume-note-submit' }, 'Hand back to the agent');
  const noteCancel = h('button', { type: 'button', className: 'quiet', on: { click: () => (noteForm.hidden = true) } }, 'Cancel');
  const noteForm = h(
    'form',
    { className: 'composer note-form', testid: 'resume-note-form', hidden: true },
    h('strong', {}, 'Resume with a note for the agent'),
    noteText,
    h('div', { className: 'composer-bar' }, noteCancel, noteSubmit),
  );
  noteForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const text = noteText.value.trim();
    noteSubmit.disabled = true;
    try {
      await post(`/admin/conversations/${encodeURIComponent(sessionId)}/resume`, text ? { note: text } : {});
      noteText.value = '';
      noteForm.hidden = true;
      onTaken?.();
      await Promise.all([loadDetail(), loadList()]);
    } catch (error) {
      showError(error.message);
    } finally {
      noteSubmit.disabled = false;
    }
  });

  const headSlot = h('div');
  const transcriptSlot = h('div');

  void loadList();
  if (sessionId) void loadDetail();
  else detail.replaceChildren(note('Choose a conversation.'));

  async function loadList(append = false) {
    try {
      const page = await get(`/admin/conversations${query({ ...filters, limit: 50, cursor: append ? nextCursor : undefined })}`);
      if (closed) return;
      conversations = append ? [...conversations, ...page.conversations] : page.conversations;
      nextCursor = page.nextCursor;
      renderList();
    } catch (error) {
      showError(error.message);
    }
  }

  function renderList() {
    more.hidden = nextCursor === null;
    if (conversations.length === 0) return list.replaceChildren(h('li', {}, note('No conversations yet.', 'no-conversations')));
    list.replaceChildren(
      ...conversations.map((conversation) =>
        h(
          'li',
          {},
          h(
            'a',
            {
              href: `#/conversations/${encodeURIComponent(conversation.sessionId)}`,
              className: conversation.sessionId === sessionId ? 'conversation current' : 'conversation',
              testid: 'conversation-row',
              data: { sessionId: conversation.sessionId, paused: conversation.paused },
            },
            h(
              'span',
              { className: 'row-top' },
              h('strong', { className: 'who' }, conversation.user.displayName ?? conversation.title ?? conversation.conversationId),
              badge(conversation.channel, 'channel'),
              h('span', { className: 'at' }, when(conversation.lastMessage?.at ?? conversation.updatedAt)),
            ),
            h(
              'span',
              { className: 'last', testid: 'conversation-last' },
              conversation.lastMessage ? `${conversation.lastMessage.role === 'assistant' ? '↩ ' : ''}${conversation.lastMessage.text}` : '—',
            ),
            conversation.handoff
              ? h('span', { className: 'last handoff-line', testid: 'conversation-handoff-reason' }, `Why: ${conversation.handoff.reason}`)
              : null,
            h(
              'span',
              { className: 'row-bottom' },
              conversation.handoff && conversation.handoff.takenBy === null ? badge('waiting for a person', 'warn', 'waiting-for-person') : null,
              conversation.assignedTo ? badge(takenByText(conversation.assignedTo, me), 'info', 'taken-by') : null,
              conversation.paused ? badge('paused', 'warn', 'paused-badge') : null,
              conversation.waiting > 0 ? badge(`${conversation.waiting} waiting`, 'info') : null,
              conversation.endedAt ? badge('ended') : null,
              conversation.status === 'failed' ? badge('failed', 'bad') : null,
              money(conversation.cost, conversation.currency),
            ),
          ),
        ),
      ),
    );
  }

  async function loadDetail() {
    try {
      const data = await get(`/admin/conversations/${encodeURIComponent(sessionId)}/transcript${query({ audit: audit ? 1 : undefined })}`);
      if (closed) return;
      renderDetail(data);
    } catch (error) {
      if (!closed) detail.replaceChildren(note(error.message));
    }
  }

  function renderDetail({ conversation, messages, summaries = [] }) {
    const auditToggle = h('input', { type: 'checkbox', checked: audit, testid: 'audit-toggle' });
    auditToggle.addEventListener('change', () => {
      audit = auditToggle.checked;
      void loadDetail();
    });
    const pauseButtons = conversation.paused
      ? [
          h('button', { type: 'button', testid: 'resume-button', on: { click: () => act('resume') } }, 'Resume the agent'),
          h('button', { type: 'button', className: 'quiet', testid: 'resume-note-button', on: { click: () => openNote() } }, 'Resume with a note…'),
        ]
      : h('button', { type: 'button', className: 'warn', testid: 'pause-button', on: { click: () => act('pause') } }, 'Pause the agent');
    if (!conversation.paused) noteForm.hidden = true;
    // Anyone's conversation but your own can be taken; one another operator has is refused, saying who.
    const takeButton =
      (me && conversation.assignedTo === me) || conversation.endedAt
        ? null
        : h('button', { type: 'button', testid: 'detail-take', on: { click: () => void take(false) } }, 'Take');
    const endButton = h(
      'button',
      {
        type: 'button',
        className: 'quiet',
        testid: 'end-button',
        disabled: Boolean(conversation.endedAt),
        on: {
          click: () => (confirm('End this conversation? The agent answers it again, and its next message starts a fresh context.') ? act('end') : undefined),
        },
      },
      'End',
    );

    if (!detail.contains(composer)) {
      detail.replaceChildren(
        h('a', { href: '#/conversations', className: 'back', testid: 'back-to-list' }, '← All conversations'),
        headSlot,
        noteForm,
        transcriptSlot,
        composer,
      );
    }
    headSlot.replaceChildren(
      h(
        'header',
        { className: 'detail-head' },
        h(
          'div',
          {},
          h('h2', {}, conversation.title ?? conversation.user.displayName ?? conversation.conversationId),
          h(
            'p',
            { className: 'meta' },
            h('a', { href: `#/users/${encodeURIComponent(conversation.user.id)}`, testid: 'user-link' }, conversation.user.displayName ?? conversation.user.id),
            ' · ',
            conversation.channel,
            ' · ',
            conversation.conversationId,
          ),
        ),
        h(
          'div',
          { className: 'detail-stats' },
          badge(conversation.status, conversation.status === 'failed' ? 'bad' : ''),
          conversation.assignedTo ? badge(takenByText(conversation.assignedTo, me), 'info', 'detail-taken') : null,
          conversation.paused ? badge('paused', 'warn', 'detail-paused') : null,
          conversation.waiting > 0 ? badge(`${conversation.waiting} waiting`, 'info', 'detail-waiting') : null,
          money(conversation.cost, conversation.currency),
          h('span', { className: 'meta' }, `${conversation.inputTokens} in / ${conversation.outputTokens} out tokens`),
        ),
      ),
      // replaceChildren writes a null as the text "null": absent parts are left out instead.
      ...(conversation.handoff ? [renderHandoff(conversation.handoff, me)] : []),
      h(
        'div',
        { className: 'actions' },
        takeButton,
        pauseButtons,
        endButton,
        h('label', { className: 'check' }, auditToggle, ' Audit: tool calls, stages'),
        takeStatus,
        takeOver,
      ),
    );
    const transcript = h('ol', { className: 'transcript', testid: 'transcript' }, ...messages.map(renderMessage));
    const panel = summaries.length > 0 ? renderSummaries(summaries, summariesOpen) : null;
    // A live refresh redraws the panel: it stays as the operator left it.
    panel?.addEventListener('toggle', () => (summariesOpen = panel.open));
    transcriptSlot.replaceChildren(...(panel ? [panel] : []), transcript);
    transcript.scrollTop = transcript.scrollHeight;
  }

  async function take(force) {
    takeStatus.textContent = '';
    takeOver.hidden = true;
    try {
      await takeConversation(sessionId, { force });
      onTaken?.();
    } catch (error) {
      const holder = error.details?.assignedTo;
      if (error.code !== 'conflict' || typeof holder !== 'string') return showError(error.message);
      takeStatus.textContent = takeRefusal(error);
      takeOver.textContent = `Take over from ${holder}`;
      takeOver.dataset.holder = holder;
      takeOver.hidden = false;
    }
    await Promise.all([loadDetail(), loadList()]);
  }

  function takeOverFrom() {
    if (confirm(`Take this conversation over from ${takeOver.dataset.holder}? They will see it is yours.`)) void take(true);
  }

  function openNote() {
    noteForm.hidden = false;
    noteText.focus();
  }

  async function act(action) {
    try {
      await post(`/admin/conversations/${encodeURIComponent(sessionId)}/${action}`);
      await Promise.all([loadDetail(), loadList()]);
    } catch (error) {
      showError(error.message);
    }
  }

  return {
    refresh() {
      void loadList();
      if (sessionId) void loadDetail();
    },
    close() {
      closed = true;
      clearTimeout(searchTimer);
    },
  };
}

/**
 * The conversation's summaries (agent.memory.summarize), newest first: what each version covers and cost; the one the
 * agent reads now is open. Nothing of the transcript below is deleted by them.
 */
function renderSummaries(summaries, open) {
  const current = summaries.find((summary) => summary.current);
  return h(
    'details',
    { className: 'summaries', testid: 'summaries', attrs: open ? { open: '' } : {} },
    h(
      'summary',
      {},
      `Summaries of the earlier conversation: ${summaries.length} version${summaries.length === 1 ? '' : 's'}`,
      current ? ` · the agent reads v${current.version} (messages ${current.fromSeq + 1}–${current.toSeq})` : ' · none read since the last reset',
    ),
    h(
      'ol',
      { className: 'summary-list' },
      ...summaries.map((summary) =>
        h(
          'li',
          { className: summary.current ? 'summary current' : 'summary', testid: 'summary', data: { version: summary.version, current: summary.current } },
          h(
            'div',
            { className: 'message-head' },
            h('span', { className: 'author' }, `v${summary.version} · messages ${summary.fromSeq + 1}–${summary.toSeq}`),
            h('span', { className: 'at' }, when(summary.at)),
            h('span', { className: 'meta' }, `${summary.model} · ${summary.inputTokens} in / ${summary.outputTokens} out`),
            money(summary.cost, summary.currency),
            summary.current ? badge('read now', 'info') : null,
          ),
          h('div', { className: 'text', testid: 'summary-text' }, summary.text),
        ),
      ),
    ),
  );
}

function renderMessage(message) {
  const isAudit = message.audience !== 'display';
  return h(
    'li',
    {
      className: `message role-${message.role} author-${message.author}${isAudit ? ' audit' : ''}`,
      testid: 'transcript-message',
      data: { role: message.role, author: message.author, audience: message.audience },
    },
    h(
      'div',
      { className: 'message-head' },
      h('span', { className: 'author' }, authorLabel(message)),
      h('span', { className: 'at' }, when(message.at)),
      message.model ? h('span', { className: 'meta' }, message.model) : null,
      Number(message.cost) > 0 ? money(message.cost, '') : null,
    ),
    h('div', { className: 'text', testid: 'message-text' }, message.text),
    message.toolCalls?.length ? h('div', { className: 'tool-calls' }, ...message.toolCalls.map(renderToolCall)) : null,
  );
}

/** A conversation's open handoff: waiting for a person or taken, why, and who asked. */
function renderHandoff(handoff, me) {
  return h(
    'div',
    { className: handoff.takenBy === null ? 'handoff' : 'handoff taken', testid: 'detail-handoff' },
    h(
      'div',
      { className: 'row-top' },
      h(
        'strong',
        { testid: 'detail-handoff-state' },
        handoff.takenBy === null ? 'Waiting for a person' : `Handed to a person · ${takenByText(handoff.takenBy, me)}`,
      ),
      h('span', { className: 'at', title: handoff.requestedAt }, when(handoff.requestedAt)),
    ),
    h('p', { className: 'reason', testid: 'detail-handoff-reason' }, handoff.reason),
    h('span', { className: 'meta' }, SOURCE_LABEL[handoff.source] ?? handoff.source),
  );
}

function authorLabel(message) {
  if (message.audience !== 'display') return `audit · ${message.role}`;
  // A note an operator left when handing the conversation back: the agent reads it, the person never does.
  if (message.role === 'system' && message.author === 'operator') return 'Note for the agent (hidden from the person)';
  return { person: 'Person', agent: 'Agent', operator: 'Operator (as agent)', palaver: 'Palaver' }[message.author] ?? message.role;
}

function renderToolCall(call) {
  return h(
    'details',
    { className: `tool-call ${call.status}`, testid: 'tool-call' },
    h(
      'summary',
      {},
      h('code', {}, call.name),
      ' ',
      badge(call.status, call.status === 'failed' ? 'bad' : call.status === 'running' ? 'info' : ''),
      call.latencyMs === null ? null : h('span', { className: 'meta' }, ` ${call.latencyMs} ms`),
    ),
    h('p', { className: 'label' }, 'Arguments'),
    h('pre', {}, pretty(call.arguments)),
    call.result === null ? null : [h('p', { className: 'label' }, 'Result'), h('pre', {}, pretty(call.result))],
    call.error === null ? null : [h('p', { className: 'label' }, 'Error'), h('pre', { className: 'error' }, call.error)],
  );
}

/** JSON indented when it is JSON; the text as it is otherwise. */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
