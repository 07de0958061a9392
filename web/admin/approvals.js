// Tool calls that wait for a decision: the count of those waiting for an operator in the top bar (with a chime when a
// new one arrives), and the "Approvals" list with Approve / Decline on each an operator decides.
import { get, post } from './api.js';
import { chime } from './chime.js';
import { badge, h, note, when } from './dom.js';

const PENDING = '/admin/approvals?status=pending';

/** Those an operator decides (a person's request is answered in their own chat). */
const forOperators = (approvals) => approvals.filter((approval) => approval.by === 'operator');

/**
 * Keeps the count of requests waiting for an operator in `counter` (hidden at 0) and chimes when one arrives that the
 * page had not seen (not on the first load). `refresh()` on every `changed`.
 */
export function watchApprovals(counter, { showError }) {
  let known = null;
  let closed = false;

  async function refresh() {
    let answer;
    try {
      answer = await get(PENDING);
    } catch (error) {
      // An older server has no such route: no count, and nothing to say about it.
      if (error.status !== 404) showError(error.message);
      return;
    }
    if (closed) return;
    const waiting = forOperators(answer.approvals).map((approval) => approval.id);
    counter.textContent = String(waiting.length);
    counter.hidden = waiting.length === 0;
    counter.title = `${waiting.length} waiting for an operator's decision`;
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

/** Why a decision did not go through, as an operator reads it. */
function refusal(error) {
  if (error?.status === 409 && error.details?.status === 'expired') return 'This request expired before anyone decided; it counts as declined.';
  if (error?.status === 409 && typeof error.details?.status === 'string') return `Someone else decided first: it was already ${error.details.status}.`;
  return error?.message ?? String(error);
}

/** Shows `#/approvals`: the pending requests, newest first; Approve / Decline on those an operator decides. */
export function approvalsView(root, _id, { showError, onDecided }) {
  let closed = false;
  /** The request whose decline form is open: a refresh keeps it open, with what was typed. */
  let declining = null;
  const list = h('ul', { className: 'approval-list', testid: 'approval-list' });
  root.replaceChildren(h('div', { className: 'page', testid: 'approvals-page' }, h('h2', {}, 'Waiting for a decision'), list));
  list.replaceChildren(h('li', {}, note('Loading…')));

  async function load() {
    try {
      const answer = await get(PENDING);
      if (!closed) render(answer.approvals);
    } catch (error) {
      if (!closed) list.replaceChildren(h('li', {}, note(error.message)));
    }
  }

  function render(approvals) {
    if (declining && !approvals.some((approval) => approval.id === declining.id)) declining = null;
    if (approvals.length === 0) return list.replaceChildren(h('li', {}, note('No tool call waits for a decision.', 'no-approvals')));
    // An operator's own decisions first: a person's requests are shown so operators know what waits, nothing more.
    const ordered = [...forOperators(approvals), ...approvals.filter((approval) => approval.by !== 'operator')];
    list.replaceChildren(...ordered.map(renderApproval));
  }

  function renderApproval(approval) {
    const conversation = `#/conversations/${encodeURIComponent(approval.sessionId)}`;
    const mine = approval.by === 'operator';
    return h(
      'li',
      { className: mine ? 'approval' : 'approval person', testid: 'approval-row', data: { approvalId: approval.id } },
      h(
        'div',
        { className: 'row-top' },
        h('a', { href: conversation, className: 'who', testid: 'approval-tool' }, approval.tool),
        badge(approval.channel, 'channel'),
        h('span', { className: 'at', title: approval.requestedAt }, when(approval.requestedAt)),
      ),
      h('p', { className: 'summary', testid: 'approval-summary' }, approval.summary),
      h(
        'div',
        { className: 'row-bottom' },
        h('span', { className: 'meta', title: approval.expiresAt }, `expires ${when(approval.expiresAt)}`),
        mine ? badge('an operator decides', 'warn', 'approval-by') : badge('the person decides, in their chat', 'info', 'approval-by'),
        mine ? buttons(approval) : null,
      ),
      mine && declining?.id === approval.id ? declineForm(approval) : null,
    );
  }

  function buttons(approval) {
    const approve = h(
      'button',
      { type: 'button', testid: 'approve-button', on: { click: () => void decide(approval, 'approve', {}, [approve, decline]) } },
      'Approve',
    );
    const decline = h(
      'button',
      {
        type: 'button',
        className: 'warn',
        testid: 'decline-button',
        disabled: declining?.id === approval.id,
        on: {
          click: () => {
            declining = { id: approval.id, reason: '' };
            void load();
          },
        },
      },
      'Decline',
    );
    return h('span', { className: 'decide' }, approve, decline);
  }

  function declineForm(approval) {
    const reason = h('input', {
      type: 'text',
      placeholder: 'Why (optional; kept in the audit)',
      value: declining.reason,
      testid: 'decline-reason',
      attrs: { maxlength: 1000, 'aria-label': 'Why it is declined (optional)' },
      on: { input: () => (declining = { id: approval.id, reason: reason.value }) },
    });
    const confirm = h('button', { type: 'submit', className: 'warn', testid: 'decline-confirm' }, 'Decline');
    const cancel = h(
      'button',
      {
        type: 'button',
        className: 'quiet',
        testid: 'decline-cancel',
        on: {
          click: () => {
            declining = null;
            void load();
          },
        },
      },
      'Cancel',
    );
    const form = h(
      'form',
      {
        className: 'decline-form',
        testid: 'decline-form',
        on: {
          submit: (event) => {
            event.preventDefault();
            const text = reason.value.trim();
            void decide(approval, 'decline', text ? { reason: text } : {}, [confirm, cancel]);
          },
        },
      },
      reason,
      confirm,
      cancel,
    );
    queueMicrotask(() => reason.focus());
    return form;
  }

  async function decide(approval, decision, body, controls) {
    for (const control of controls) control.disabled = true;
    try {
      await post(`/admin/approvals/${encodeURIComponent(approval.id)}/${decision}`, body);
      declining = null;
      onDecided?.();
    } catch (error) {
      showError(refusal(error));
      declining = null;
    }
    await load();
  }

  void load();
  return {
    refresh: () => void load(),
    close() {
      closed = true;
    },
  };
}
