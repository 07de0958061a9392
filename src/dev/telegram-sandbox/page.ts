// The sandbox page: a private chat with the bot (or, with the user-account side on, with the owner's Telegram
// account) as a Telegram app shows it. Three files served by the sandbox itself
// (its CSP allows nothing else). What the bot sends is untrusted: its text reaches the page as text nodes only, and
// formatting comes from Telegram's entities, turned into elements here; a link is kept only for http(s), tg and mailto.

export const SANDBOX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Telegram sandbox</title>
<link rel="stylesheet" href="/sandbox.css">
<script src="/sandbox.js" defer></script>
</head>
<body>
<main class="app">
  <header class="top">
    <div class="who">
      <h1 data-testid="bot-name">Bot</h1>
      <p class="status" data-testid="status">bot</p>
    </div>
    <div class="pickers">
      <label class="as" data-testid="view-picker" hidden>Chat with
        <select data-testid="view">
          <option value="bot">the bot</option>
          <option value="account">owner's account</option>
        </select>
      </label>
      <label class="as">Writing as
        <select data-testid="person"></select>
      </label>
    </div>
  </header>
  <section class="chat" data-testid="chat" aria-live="polite"></section>
  <label class="owner-bar" data-testid="owner-bar" hidden><input type="checkbox" data-testid="as-owner"> write as the account's owner (from their phone)</label>
  <form class="composer" data-testid="composer">
    <textarea data-testid="input" rows="1" maxlength="4096" placeholder="Message" aria-label="Message"></textarea>
    <button type="submit" data-testid="send">Send</button>
  </form>
  <p class="note">A local sandbox: nothing here reaches Telegram.</p>
</main>
</body>
</html>
`;

export const SANDBOX_CSS = `
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #dfe7ef; color: #111; }
.app { display: flex; flex-direction: column; height: 100%; max-width: 760px; margin: 0 auto; background: #c8d8e6; }
.top { display: flex; align-items: center; justify-content: space-between; gap: 12px; padding: 8px 12px; background: #fff; border-bottom: 1px solid #ccd; }
.who { min-width: 0; }
.top h1 { font-size: 16px; margin: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.status { margin: 0; font-size: 13px; color: #708499; min-height: 18px; }
.status.typing { color: #3390ec; }
.as { flex: none; font-size: 13px; color: #445; display: flex; flex-direction: column; align-items: flex-end; gap: 2px; }
.as select { font: inherit; max-width: 140px; }
.pickers { display: flex; gap: 8px; flex: none; }
[hidden] { display: none !important; }
.row.owner .bubble { background: #fff4cc; }
.label { font-size: 12px; color: #8a6d00; margin-bottom: 2px; }
.tick { font-size: 11px; color: #708499; }
.tick.read { color: #3390ec; }
.owner-bar { display: flex; align-items: center; gap: 6px; padding: 6px 10px; font-size: 13px; color: #445; background: #fffbe6; border-top: 1px solid #ccd; }
.chat { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 6px; }
.row { display: flex; flex-direction: column; max-width: 82%; }
.row.person { align-self: flex-end; align-items: flex-end; }
.row.bot { align-self: flex-start; align-items: flex-start; }
.bubble { padding: 6px 10px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; box-shadow: 0 1px 1px rgba(0,0,0,.12); }
.person .bubble { background: #e3fcc8; }
.bubble.draft { opacity: .65; border: 1px dashed #8aa; }
.bubble a { color: #2a6fdb; }
.bubble code { font-family: ui-monospace, Menlo, Consolas, monospace; background: #eef; padding: 0 2px; border-radius: 3px; }
.bubble pre { margin: 4px 0; padding: 6px; background: #eef; border-radius: 6px; overflow-x: auto; white-space: pre; }
.bubble blockquote { margin: 2px 0; padding-left: 8px; border-left: 3px solid #3390ec; }
.spoiler { background: #999; color: transparent; border-radius: 3px; cursor: pointer; }
.spoiler.shown { background: none; color: inherit; }
.quote { font-size: 12px; color: #3390ec; border-left: 2px solid #3390ec; padding-left: 6px; margin-bottom: 2px; }
.reaction { font-size: 14px; background: #fff; border-radius: 10px; padding: 0 6px; margin-top: -4px; box-shadow: 0 1px 1px rgba(0,0,0,.15); }
.buttons { display: flex; flex-direction: column; gap: 4px; margin-top: 4px; width: 100%; }
.buttons .line { display: flex; gap: 4px; }
.buttons button, .buttons a { flex: 1; font: inherit; font-size: 14px; padding: 6px; border: 0; border-radius: 8px; background: rgba(255,255,255,.7); color: #2a6fdb; cursor: pointer; text-align: center; text-decoration: none; }
.pressed, .step-back { align-self: center; max-width: 92%; text-align: center; font-size: 12px; color: #556; background: rgba(255,255,255,.5); padding: 2px 8px; border-radius: 10px; }
.composer { display: flex; gap: 8px; padding: 8px; background: #fff; border-top: 1px solid #ccd; }
.composer textarea { flex: 1; font: inherit; resize: none; padding: 8px; border: 1px solid #ccd; border-radius: 8px; min-width: 0; }
.composer button { font: inherit; padding: 8px 14px; border: 0; border-radius: 8px; background: #3390ec; color: #fff; cursor: pointer; }
.note { margin: 0; padding: 4px 8px 8px; font-size: 12px; color: #667; background: #fff; text-align: center; }
`;

export const SANDBOX_JS = `'use strict';
(function () {
  var TYPING_MS = 5000;
  var events = [];
  var people = [];
  var current = 0;
  var typingTimer = 0;
  var idle = 'bot';
  var info = null;
  var view = 'bot';
  var chat = document.querySelector('[data-testid=chat]');
  var status = document.querySelector('[data-testid=status]');
  var select = document.querySelector('[data-testid=person]');
  var input = document.querySelector('[data-testid=input]');
  var form = document.querySelector('[data-testid=composer]');
  var viewSelect = document.querySelector('[data-testid=view]');
  var ownerBar = document.querySelector('[data-testid=owner-bar]');
  var asOwner = document.querySelector('[data-testid=as-owner]');

  /** Events of the chat on screen: the person chosen, with the bot or with the owner's account. */
  function inView(e) {
    return e.chatId === current && (e.side === 'account') === (view === 'account');
  }

  function el(tag, className, testid) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (testid) node.setAttribute('data-testid', testid);
    return node;
  }

  /** A link target only for schemes a Telegram app opens; anything else stays text. */
  function safeHref(raw) {
    try {
      var url = new URL(raw);
      return ['http:', 'https:', 'tg:', 'mailto:'].indexOf(url.protocol) >= 0 ? url.href : null;
    } catch (e) {
      return null;
    }
  }

  /** The element for one entity, and where its inner text goes. */
  function entityElement(entity, text) {
    var node;
    switch (entity.type) {
      case 'bold': node = el('strong'); break;
      case 'italic': node = el('em'); break;
      case 'underline': node = el('u'); break;
      case 'strikethrough': node = el('s'); break;
      case 'code': node = el('code'); break;
      case 'spoiler':
        node = el('span', 'spoiler');
        node.addEventListener('click', function () { node.classList.add('shown'); });
        break;
      case 'blockquote':
      case 'expandable_blockquote': node = el('blockquote'); break;
      case 'pre': {
        var pre = el('pre');
        var code = el('code');
        if (entity.language) code.setAttribute('data-language', entity.language);
        pre.appendChild(code);
        return { node: pre, inner: code };
      }
      case 'text_link':
      case 'url':
      case 'email': {
        var target = entity.type === 'text_link' ? entity.url : entity.type === 'email' ? 'mailto:' + text : /^[a-z][a-z0-9+.-]*:/i.test(text) ? text : 'https://' + text;
        var href = safeHref(target || '');
        if (!href) { node = el('span'); break; }
        node = el('a');
        node.href = href;
        node.target = '_blank';
        node.rel = 'noopener noreferrer';
        break;
      }
      default:
        node = el('span', 'entity-' + String(entity.type).replace(/[^a-z_]/g, ''));
    }
    return { node: node, inner: node };
  }

  /** Text and entities (UTF-16 offsets, nested as Telegram nests them) as text nodes inside elements. */
  function build(parent, text, entities, start, end) {
    var pos = start;
    var i = 0;
    while (i < entities.length) {
      var entity = entities[i];
      if (entity.offset < pos) { i++; continue; }
      if (entity.offset >= end) break;
      if (entity.offset > pos) parent.appendChild(document.createTextNode(text.slice(pos, entity.offset)));
      var stop = Math.min(entity.offset + entity.length, end);
      var inner = [];
      var j = i + 1;
      while (j < entities.length && entities[j].offset < stop) { inner.push(entities[j]); j++; }
      var made = entityElement(entity, text.slice(entity.offset, stop));
      build(made.inner, text, inner, entity.offset, stop);
      parent.appendChild(made.node);
      pos = stop;
      i = j;
    }
    if (pos < end) parent.appendChild(document.createTextNode(text.slice(pos, end)));
  }

  function formatted(text, entities) {
    var sorted = (entities || []).filter(function (e) { return e.length > 0 && e.offset >= 0; }).slice().sort(function (a, b) {
      return a.offset - b.offset || b.length - a.length;
    });
    var bubble = el('div', 'bubble', 'text');
    build(bubble, text, sorted, 0, text.length);
    return bubble;
  }

  function press(event, button) {
    fetch('/api/presses', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: current, messageId: event.messageId, data: button.data }),
    });
  }

  /** A message: the person's (right), the bot's or the account's (left), or the account owner's by hand (left, marked). */
  function messageRow(event, reactions, readUpTo) {
    var from = event.kind === 'bot' && event.side === 'account' ? 'account' : event.kind;
    var row = el('div', event.kind === 'person' ? 'row person' : 'row bot' + (from === 'owner' ? ' owner' : ''), 'message');
    row.setAttribute('data-from', from);
    row.setAttribute('data-message-id', String(event.messageId));
    if (from === 'owner') {
      var label = el('div', 'label');
      label.textContent = 'the owner, by hand';
      row.appendChild(label);
    }
    if (event.replyTo !== undefined) {
      var quoted = events.filter(function (e) { return inView(e) && e.messageId === event.replyTo && (e.kind === 'person' || e.kind === 'bot' || e.kind === 'owner'); })[0];
      var quote = el('div', 'quote', 'quote');
      quote.textContent = quoted ? quoted.text.slice(0, 80) : 'a message';
      row.appendChild(quote);
    }
    var bubble = event.kind === 'bot' ? formatted(event.text, event.entities) : el('div', 'bubble', 'text');
    if (event.kind !== 'bot') bubble.textContent = event.text;
    row.appendChild(bubble);
    if (event.kind === 'person' && event.side === 'account') {
      // As the person sees it: one tick sent, two once the account read it.
      var read = event.messageId <= readUpTo;
      var tick = el('span', read ? 'tick read' : 'tick', 'tick');
      tick.textContent = read ? '✓✓ read' : '✓';
      row.setAttribute('data-read', read ? 'yes' : 'no');
      row.appendChild(tick);
    }
    var emoji = reactions[event.messageId];
    if (emoji) {
      var badge = el('span', 'reaction', 'reaction');
      badge.textContent = emoji;
      row.appendChild(badge);
    }
    if (event.kind === 'bot' && event.buttons && event.buttons.length) {
      var box = el('div', 'buttons', 'buttons');
      event.buttons.forEach(function (line) {
        var lineBox = el('div', 'line');
        line.forEach(function (button) {
          var href = button.url ? safeHref(button.url) : null;
          var node = href ? el('a', '', 'button') : el('button', '', 'button');
          node.textContent = button.text;
          if (href) { node.href = href; node.target = '_blank'; node.rel = 'noopener noreferrer'; }
          else if (button.data !== undefined) { node.type = 'button'; node.addEventListener('click', function () { press(event, button); }); }
          lineBox.appendChild(node);
        });
        box.appendChild(lineBox);
      });
      row.appendChild(box);
    }
    return row;
  }

  /** The chat of the person writing now, rebuilt from its events (a draft shows until the bot sends a message). */
  function render() {
    var mine = events.filter(inView);
    var reactions = {};
    var readUpTo = 0;
    mine.forEach(function (e) {
      if (e.kind === 'reaction') reactions[e.messageId] = e.emoji;
      if (e.kind === 'read') readUpTo = Math.max(readUpTo, e.maxId);
    });
    var draft = null;
    var lastTyping = 0;
    chat.textContent = '';
    mine.forEach(function (e) {
      if (e.kind === 'person' || e.kind === 'bot' || e.kind === 'owner') chat.appendChild(messageRow(e, reactions, readUpTo));
      if (e.kind === 'bot') { draft = null; lastTyping = 0; }
      if (e.kind === 'draft') draft = e;
      if (e.kind === 'typing') lastTyping = e.action === 'cancel' ? 0 : e.at;
      if (e.kind === 'owner') {
        var held = el('div', 'step-back', 'step-back');
        held.textContent = e.until
          ? 'The owner wrote by hand: the agent steps back in this chat until ' + new Date(e.until).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }) + ' (ownerTakeoverMinutes after their last message).'
          : 'The owner wrote by hand: the agent steps back in this chat for channels.telegramUser.ownerTakeoverMinutes after their last message.';
        chat.appendChild(held);
      }
      if (e.kind === 'press') {
        var note = el('div', 'pressed', 'pressed');
        note.textContent = 'pressed a button: ' + e.data;
        chat.appendChild(note);
      }
    });
    if (draft && draft.text) {
      var row = el('div', 'row bot', 'draft');
      var bubble = formatted(draft.text, draft.entities);
      bubble.classList.add('draft');
      row.appendChild(bubble);
      chat.appendChild(row);
    }
    showTyping(lastTyping);
    chat.scrollTop = chat.scrollHeight;
  }

  /** "typing…" as Telegram shows it: for five seconds after the bot's last chat action, or until it sends. */
  function showTyping(at) {
    clearTimeout(typingTimer);
    var left = at + TYPING_MS - Date.now();
    var typing = at > 0 && left > 0;
    status.textContent = typing ? 'typing…' : idle;
    status.classList.toggle('typing', typing);
    status.setAttribute('data-typing', typing ? 'yes' : 'no');
    if (typing) typingTimer = setTimeout(function () { showTyping(0); }, left);
  }

  /** The header of the chat on screen: the bot, or the owner's account (whose owner may write too). */
  function header() {
    var account = view === 'account';
    var name = account ? info.account.owner.first_name : info.bot.first_name;
    document.querySelector('[data-testid=bot-name]').textContent = name;
    idle = account ? 'user account · sandbox' : '@' + info.bot.username + ' · bot';
    ownerBar.hidden = !account;
    document.title = name + ' · Telegram sandbox';
    showTyping(0);
  }

  function start(given) {
    info = given;
    people = info.people;
    header();
    if (info.account) {
      document.querySelector('[data-testid=view-picker]').hidden = false;
      viewSelect.addEventListener('change', function () { view = viewSelect.value; header(); render(); });
    }
    people.forEach(function (person) {
      var option = el('option');
      option.value = String(person.id);
      option.textContent = person.first_name;
      if (person.username) option.title = '@' + person.username;
      select.appendChild(option);
    });
    current = people[0].id;
    select.addEventListener('change', function () { current = Number(select.value); render(); });
    var source = new EventSource('/api/events');
    source.onmessage = function (message) {
      var event = JSON.parse(message.data);
      if (events.some(function (e) { return e.seq === event.seq; })) return;
      events.push(event);
      if (inView(event)) render();
    };
    source.onopen = function () { document.body.setAttribute('data-connected', 'yes'); };
  }

  form.addEventListener('submit', function (submit) {
    submit.preventDefault();
    var text = input.value;
    if (!text.trim()) return;
    input.value = '';
    var account = view === 'account';
    fetch(account ? '/api/account/messages' : '/api/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(account ? { chatId: current, text: text, asOwner: asOwner.checked } : { chatId: current, text: text }),
    });
  });
  input.addEventListener('keydown', function (key) {
    if (key.key === 'Enter' && !key.shiftKey) { key.preventDefault(); form.requestSubmit(); }
  });

  fetch('/api/info').then(function (response) { return response.json(); }).then(start);
})();
`;
