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

/** Money as the server sent it (an exact decimal string), with its currency. */
function money(amount, currency) {
  return `${amount} ${currency}`;
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
  if (call.cost !== undefined) figures.append(el('span', 'cost', money(call.cost, turn.currency)));
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

/** The entities in focus the turn loaded for its stage: what the model saw in its hidden context. */
function focusStep(focus) {
  const node = el('section', 'step focus');
  node.dataset.kind = 'focus';
  node.append(el('div', 'title', focus.stage ? `Focus · stage ${focus.stage.id} (by ${focus.stage.by})` : 'Focus · no stage'));
  for (const entity of focus.entities) {
    const group = el('div', 'entity-type');
    group.dataset.type = entity.type;
    group.append(el('div', 'who', `${entity.type} (${entity.items.length})`));
    const list = el('ul', 'entities');
    for (const item of entity.items) {
      const row = el('li');
      row.append(el('code', 'id', JSON.stringify(item.id)), document.createTextNode(' '), el('span', 'description', item.description));
      list.append(row);
    }
    if (entity.items.length === 0) list.append(el('li', 'none', 'none'));
    group.append(list);
    node.append(group);
  }
  for (const type of focus.unavailable) {
    const group = el('div', 'entity-type unavailable');
    group.dataset.type = type;
    group.append(el('div', 'who', type), el('div', 'error', 'could not be loaded (its tool failed; the turn went on without it)'));
    node.append(group);
  }
  if (focus.entities.length === 0 && focus.unavailable.length === 0) node.append(el('div', 'who', 'nothing needed in this stage'));
  return node;
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

/** One step of a reply plan (replies as actions), in words. */
function actionText(step) {
  switch (step.kind) {
    case 'send':
      return `send${step.replyTo === null || step.replyTo === undefined ? '' : ` (reply to ${step.replyTo})`}: ${step.text}`;
    case 'typing':
      return `typing ${seconds(step.ms)}`;
    case 'wait':
      return `wait ${seconds(step.ms)}`;
    case 'react':
      return `reaction ${step.emoji} on message ${step.messageId}`;
    case 'ignore':
      return `ignore${step.reason ? `: ${step.reason}` : ''}`;
    default:
      return JSON.stringify(step);
  }
}

function replyStep(reply) {
  const node = el('section', `step reply${reply.failed ? ' failed' : ''}`);
  node.dataset.kind = 'reply';
  node.append(el('div', 'title', reply.failed ? 'Apology sent (the turn failed)' : `Reply · ${reply.parts.length} part(s)`));
  for (const part of reply.parts) node.append(el('pre', 'part', part));
  if (Array.isArray(reply.actions)) {
    const list = el('ol', 'actions');
    for (const step of reply.actions) {
      const item = el('li', 'action', actionText(step));
      item.dataset.kind = step.kind;
      list.append(item);
    }
    node.append(el('div', 'who', `actions (${reply.actions.length})`), list);
  }
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
  if (turn.reply) {
    figures.append(el('span', 'turn-cost', `cost ${money(turn.reply.cost, turn.currency)}`));
    // The turn rounds the calls' exact sum once, to 6 places: show the sum too when that rounding changed it.
    if (turn.callsCost !== turn.reply.cost) figures.append(el('span', 'calls-cost', `calls ${money(turn.callsCost, turn.currency)} exactly`));
    figures.append(el('span', 'turn-ms', `${turn.reply.ms} ms in all`));
  } else figures.append(el('span', '', 'running…'));
  card.append(figures);
  if (turn.focus) card.append(focusStep(turn.focus));
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
