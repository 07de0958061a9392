// Palaver's operator dashboard: sign-in, then one view at a time chosen by the URL's hash. No build step, no
// framework; data reaches the page only as text nodes (dom.js). Live: /admin/events says "changed" and the open
// view reloads what it shows; without that stream the view is reloaded every few seconds.
import { ApiError, restoreSession, signIn, signOut, SIGNED_OUT, whoAmI } from './api.js';
import { approvalsView, watchApprovals } from './approvals.js';
import { conversationsView } from './conversations.js';
import { costsView } from './costs.js';
import { handoffsView, watchHandoffs } from './handoffs.js';
import { healthView } from './health.js';
import { userView } from './user.js';

const POLL_MS = 5000;

const signInSection = document.getElementById('sign-in');
const signInForm = document.getElementById('sign-in-form');
const signInError = document.getElementById('sign-in-error');
const tokenInput = document.getElementById('sign-in-token');
const appSection = document.getElementById('app');
const viewRoot = document.getElementById('view');
const errorLine = document.getElementById('error-line');
const liveState = document.getElementById('live');
const handoffCount = document.getElementById('handoff-count');
const approvalCount = document.getElementById('approval-count');
const who = document.getElementById('who');

/** The open view: `{ refresh(), close() }`. */
let current = null;
/** The count of conversations waiting for a person, kept whatever view is open. */
let handoffs = null;
/** The count of tool calls waiting for an operator's decision, kept whatever view is open. */
let approvals = null;
let events = null;
let pollTimer = null;
/** The signed-in role: an `operator` sees conversations and people; `admin` also costs and health. */
let role = 'operator';
/** The signed-in name, as the audit and a conversation's `assignedTo` give it. */
let actor = null;

signInForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  signInError.hidden = true;
  try {
    await signIn(tokenInput.value);
    tokenInput.value = '';
    enter();
  } catch (error) {
    signInError.textContent = error instanceof ApiError && error.status === 401 ? 'That is neither an operator token nor the admin token.' : error.message;
    signInError.hidden = false;
    tokenInput.select();
  }
});

document.getElementById('sign-out').addEventListener('click', async () => {
  await signOut().catch(() => undefined);
  leave();
});
window.addEventListener(SIGNED_OUT, () => leave('Your session ended; sign in again.'));
window.addEventListener('hashchange', () => {
  if (!appSection.hidden) route();
});

void restoreSession().then((signedIn) => (signedIn ? enter() : leave()));

async function enter() {
  signInSection.hidden = true;
  appSection.hidden = false;
  await showWho();
  handoffs?.close();
  handoffs = watchHandoffs(handoffCount, { showError });
  approvals?.close();
  approvals = watchApprovals(approvalCount, { showError });
  listen();
  route();
}

/** The signed-in name and role in the top bar; the admins' views are shown to admins only. */
async function showWho() {
  try {
    const me = await whoAmI();
    role = me.role;
    actor = me.actor;
    who.textContent = me.role === 'admin' ? `${me.actor} · admin` : me.actor;
  } catch {
    role = 'operator';
    actor = null;
    who.textContent = '';
  }
  for (const link of document.querySelectorAll('[data-admin-only]')) link.hidden = role !== 'admin';
}

function leave(message) {
  current?.close?.();
  current = null;
  handoffs?.close();
  handoffs = null;
  handoffCount.hidden = true;
  approvals?.close();
  approvals = null;
  approvalCount.hidden = true;
  events?.close();
  events = null;
  clearInterval(pollTimer);
  viewRoot.replaceChildren();
  who.textContent = '';
  appSection.hidden = true;
  signInSection.hidden = false;
  signInError.hidden = !message;
  signInError.textContent = message ?? '';
  tokenInput.focus();
}

/** `#/conversations[/<sessionId>]`, `#/users/<userId>`, `#/handoffs`, `#/approvals`, `#/costs`, `#/health`. */
function route() {
  const [, name = 'conversations', id] = location.hash.split('/').map((part) => decodeURIComponent(part));
  current?.close?.();
  showError('');
  const context = {
    showError,
    me: actor,
    navigate: (hash) => (location.hash = hash),
    onTaken: () => handoffs?.refresh(),
    onDecided: () => approvals?.refresh(),
  };
  const views = {
    conversations: conversationsView,
    users: userView,
    handoffs: handoffsView,
    approvals: approvalsView,
    ...(role === 'admin' ? { costs: costsView, health: healthView } : {}),
  };
  const view = views[name] ?? conversationsView;
  for (const link of document.querySelectorAll('.tabs a'))
    link.classList.toggle(
      'current',
      link.dataset.view === (views[name] ? name : 'conversations') || (name === 'users' && link.dataset.view === 'conversations'),
    );
  current = view(viewRoot, id, context);
}

/** Pushed updates from /admin/events; polling when the stream is not there (an older server, a proxy in the way). */
function listen() {
  events?.close();
  clearInterval(pollTimer);
  if (typeof EventSource === 'undefined') return poll();
  events = new EventSource('/admin/events');
  events.addEventListener('ready', () => {
    clearInterval(pollTimer);
    pollTimer = null;
    setLive('● live', 'on');
  });
  events.addEventListener('changed', refresh);
  events.addEventListener('error', () => {
    // EventSource retries by itself; meanwhile the view is kept fresh by polling.
    if (events?.readyState === EventSource.CLOSED) events = null;
    if (pollTimer === null || pollTimer === undefined) poll();
  });
}

function poll() {
  setLive('○ polling', 'off');
  clearInterval(pollTimer);
  pollTimer = setInterval(refresh, POLL_MS);
}

function refresh() {
  current?.refresh();
  void handoffs?.refresh();
  void approvals?.refresh();
}

function setLive(text, state) {
  liveState.textContent = text;
  liveState.dataset.state = state;
}

function showError(message) {
  errorLine.textContent = message;
  errorLine.hidden = !message;
}
