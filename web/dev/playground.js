// The playground of `palaver dev`: polls /dev/api/turns and draws each turn. Everything shown comes from the model,
// tools or people, so it is set as text (textContent), never parsed as markup.
'use strict';

const POLL_MS = 800;
const turnsElement = document.getElementById('turns');
const statusElement = document.getElementById('status');
/** Which <details> the developer opened, kept across redraws. */
const opened = new Set();
let lastBody = '';

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function details(key, summaryText, body) {
  const node = el('details');
  node.dataset.key = key;
  node.open = opened.has(key);
  node.addEventListener('toggle', () => (node.open ? opened.add(key) : opened.delete(key)));
  node.append(el('summary', '', summaryText), body);
  return node;
}

function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

function time(iso) {
  return new Date(iso).toLocaleTimeString();
}

/** One item the model was sent: a message, or a tool call and its result from earlier in the turn. */
function inputItem(item) {
  const node = el('div', 'item');
  if (item.type === 'message') {
    node.append(el('div', 'who', item.role), el('pre', '', item.content));
    if (item.images?.length) node.append(el('div', 'who', `${item.images.length} image(s) attached`));
  } else if (item.type === 'tool_call') {
    node.append(el('div', 'who', `tool call ${item.name}`), el('pre', '', pretty(item.arguments)));
  } else {
    node.append(el('div', 'who', 'tool result'), el('pre', '', item.output));
  }
  return node;
}

function modelStep(turn, call, index) {
  const key = `${turn.correlationId}:${index}`;
  const node = el('section', `step model${call.error ? ' failed' : ''}`);
  node.dataset.kind = 'model';
  node.append(el('div', 'title', `Model call · ${call.answeredBy ?? call.model}`));
  const figures = el('div', 'figures');
  figures.append(el('span', '', `${call.ms} ms`), el('span', '', `path ${call.path}`));
  if (call.usage) {
    figures.append(el('span', 'tokens', `${call.usage.inputTokens} tokens in · ${call.usage.outputTokens} out`));
    if (call.usage.cachedInputTokens) figures.append(el('span', '', `${call.usage.cachedInputTokens} cached`));
  }
  node.append(figures);
  node.append(
    details(`${key}:instructions`, `Instructions as composed (${call.instructions.length} characters)`, el('pre', 'instructions', call.instructions)),
  );
  const input = el('div');
  for (const item of call.input) input.append(inputItem(item));
  node.append(details(`${key}:input`, `Conversation sent (${call.input.length} items)`, input));
  node.append(details(`${key}:tools`, `Tools offered (${call.tools.length})`, el('pre', '', call.tools.join('\n') || 'none')));
  if (call.error) node.append(el('pre', 'error', `Failed: ${call.error}`));
  if (call.toolCalls?.length) {
    for (const request of call.toolCalls) node.append(el('div', 'asked', `asked for ${request.name} ${request.arguments}`));
  }
  if (call.text) node.append(el('div', 'who', 'answered'), el('pre', 'answer', call.text));
  return node;
}

function toolStep(call) {
  const failed = call.error !== undefined || call.isError === true;
  const node = el('section', `step tool${failed ? ' failed' : ''}`);
  node.dataset.kind = 'tool';
  node.append(el('div', 'title', `Tool ${call.tool}${failed ? ' (error)' : ''}`));
  const figures = el('div', 'figures');
  figures.append(el('span', '', `${call.ms} ms`), el('span', '', `role ${call.role ?? 'none'}`), el('span', '', `call ${call.callId}`));
  node.append(figures, el('div', 'who', 'arguments'), el('pre', 'arguments', pretty(call.arguments)));
  node.append(el('div', 'who', 'result'), el('pre', 'result', call.error ?? call.result ?? ''));
  return node;
}

function replyStep(reply) {
  const node = el('section', `step reply${reply.failed ? ' failed' : ''}`);
  node.dataset.kind = 'reply';
  node.append(el('div', 'title', reply.failed ? 'Apology sent (the turn failed)' : `Reply · ${reply.parts.length} part(s)`));
  for (const part of reply.parts) node.append(el('pre', 'part', part));
  if (reply.actions) node.append(el('div', 'who', 'actions'), el('pre', 'actions', pretty(reply.actions)));
  return node;
}

function turnCard(turn) {
  const card = el('article', 'turn');
  card.dataset.correlationId = turn.correlationId;
  const head = el('div', 'turn-head');
  head.append(el('span', '', time(turn.startedAt)), el('span', 'said', turn.person.join(' / ') || '(the person’s message is being stored)'));
  card.append(head);
  const models = turn.calls.filter((call) => call.kind === 'model');
  const input = models.reduce((sum, call) => sum + (call.usage?.inputTokens ?? 0), 0);
  const output = models.reduce((sum, call) => sum + (call.usage?.outputTokens ?? 0), 0);
  const figures = el('div', 'figures');
  if (turn.conversation) figures.append(el('span', '', `${turn.conversation.channel} · ${turn.conversation.user}`));
  figures.append(el('span', '', `${models.length} model call(s)`), el('span', '', `${input} + ${output} tokens`));
  if (turn.reply) figures.append(el('span', '', `cost ${turn.reply.cost}`), el('span', '', `${turn.reply.ms} ms in all`));
  else figures.append(el('span', '', 'running…'));
  card.append(figures);
  turn.calls.forEach((call, index) => card.append(call.kind === 'model' ? modelStep(turn, call, index) : toolStep(call)));
  if (turn.reply) card.append(replyStep(turn.reply));
  return card;
}

async function poll() {
  try {
    const response = await fetch('/dev/api/turns', { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const body = await response.text();
    if (body !== lastBody) {
      lastBody = body;
      const { turns } = JSON.parse(body);
      turnsElement.replaceChildren(...turns.map(turnCard));
      statusElement.textContent = turns.length === 0 ? 'Waiting for the first turn…' : `${turns.length} turn(s), newest first.`;
    }
  } catch (error) {
    statusElement.textContent = `Cannot reach palaver dev (${error.message}); retrying…`;
  }
  setTimeout(poll, POLL_MS);
}

poll();
