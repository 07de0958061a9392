// Palaver web chat: sends AG-UI RunAgentInput to /agui and renders the SSE event stream. No build step.
// Who is talking is decided by the server: this browser's signed visitor cookie (HttpOnly, set with the page), so
// the page holds no credential. Conversations and their messages come from the server; the page only remembers
// which conversation was open. Embedded in another site (the widget's frame, served at /embed), the page may be
// handed that site's signed user token by postMessage; it keeps it in memory and sends it as a header.
'use strict';

(() => {
  // First of all: the composer never submits as a form. A native submit would navigate the frame, which the page's
  // policy (form-action 'none') refuses; whatever fails below, Send must not do that.
  const form = document.getElementById('composer');
  form.addEventListener('submit', (event) => event.preventDefault());

  const THREAD_KEY = 'palaver.threadId';
  const TOOL_RESULT_PREVIEW = 80;
  // A typing event says how long to show it; a value out of this range is clamped rather than trusted.
  const MAX_TYPING_SECONDS = 60;
  const MAX_REACTION_CHARS = 16;
  const MAX_TOKEN_CHARS = 8192;

  const list = document.getElementById('messages');
  const input = document.getElementById('input');
  const send = document.getElementById('send');
  const errorLine = document.getElementById('error');
  const newThread = document.getElementById('new-thread');
  const conversationList = document.getElementById('conversations');
  const typingLine = document.getElementById('typing');
  const waitingLine = document.getElementById('waiting');
  const welcome = document.getElementById('welcome');
  const pendingList = document.getElementById('pending-files');
  const attachButton = document.getElementById('attach');
  const fileInput = document.getElementById('file-input');
  const markdown = markdownRenderer();
  const embed = embedding();
  applyAccent();
  const texts = pageTexts();
  applyTexts();
  const attachRules = attachmentRules();
  /** Files chosen for the next message: `{ file, url }` (an object URL for an image's preview). */
  let pending = [];
  setUpAttaching();

  const storage = pageStorage();
  // Left over from earlier versions of the page: an API key and transcripts kept in this browser.
  for (const key of storage.keys()) {
    if (key === 'palaver.apiKey' || key.startsWith('palaver.transcript.')) storage.remove(key);
  }

  let threadId = storage.get(THREAD_KEY) || startThread();
  let running = false;
  /** An operator paused the agent in the open conversation: a person answers, the page does not wait for the agent. */
  let paused = false;
  /** The "Thinking…" line of the run under way, if any. */
  let thinkingLine = null;
  /** The open conversation's events stream (messages from a person, pause and resume): its thread and its abort. */
  let watcher = null;
  /** Events that wait for the run under way to end (a reply it may carry itself, a transcript to read again). */
  let deferred = [];
  /** Reply ids a run of this page showed: the same reply from the events stream is not shown twice. */
  const shownReplies = new Set();
  /** The embedding site's user token: in memory only, sent as a header, never put in a URL or in storage. */
  let userToken = null;
  /** False while an embedding site that said it has a user token has not handed it over yet. */
  let ready = !(embed && embed.awaitToken);

  if (ready) begin();
  else setRunning(false);
  if (embed) setUpEmbedding();

  form.addEventListener('submit', () => void submit());
  input.addEventListener('keydown', (event) => {
    // Enter sends, Shift+Enter adds a line; IME composition must not send half a word.
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void submit();
    }
  });
  input.addEventListener('input', autosize);
  newThread.addEventListener('click', () => {
    if (running) return;
    threadId = startThread();
    list.replaceChildren();
    stopWatching();
    showError('');
    markCurrent();
    showWelcome();
    input.focus();
  });

  /**
   * Shows the list and the open conversation of whoever is talking now. `switched`: someone else may be talking
   * (another user token), so a conversation the server does not list for them is left for a new one.
   */
  function begin(switched = false) {
    // Another person may be talking now: the open events stream was theirs.
    if (switched) stopWatching();
    // Only a conversation the server lists for this caller is fetched; a new thread has nothing stored yet.
    void refreshConversations().then((ids) => {
      if (ids.includes(threadId)) {
        void openThread(threadId);
        return;
      }
      if (switched && !running) {
        threadId = startThread();
        list.replaceChildren();
        markCurrent();
      }
      showWelcome();
    });
  }

  /** `fetch` of this server's API as the current caller: with the embedding site's user token when there is one. */
  function api(url, init = {}) {
    const headers = { ...init.headers };
    if (userToken) headers['x-palaver-user-token'] = userToken;
    // In another site's frame the browser may keep no cookie for this server: the visitor id the server wrote into
    // the page stands in for it (the cookie still wins where the browser sends one).
    else if (embed && embed.visitor) headers['x-palaver-visitor'] = embed.visitor;
    return fetch(url, { ...init, headers });
  }

  /** Shows a conversation as the server stored it (a new one has nothing yet). */
  async function openThread(id) {
    try {
      const response = await api(`conversations/messages?id=${encodeURIComponent(id)}`, { headers: { accept: 'application/json' } });
      if (id !== threadId) return;
      if (response.status === 404) {
        list.replaceChildren();
        showWelcome();
        return;
      }
      if (!response.ok) {
        // Not ours (another visitor's id in this browser's storage) or the server refused: start afresh.
        if (response.status === 403) threadId = startThread();
        list.replaceChildren();
        showError(await httpErrorMessage(response));
        return;
      }
      const body = await response.json();
      if (id !== threadId) return;
      list.replaceChildren();
      for (const message of body.messages) {
        const li =
          typeof message.author === 'string'
            ? renderOperatorMessage(message.id, message.author, message.text, message.at)
            : renderMessage(message.role, message.text, message.at);
        li.dataset.messageId = message.id;
        if (Array.isArray(message.attachments)) showStoredAttachments(li, id, message.attachments);
        // A question whose request still waits for the person: its buttons again, as when it was asked.
        if (message.approval && typeof message.approval === 'object') {
          showApprovalRequest({ approvalId: message.approval.id, summary: message.text, expiresAt: message.approval.expiresAt });
        }
      }
      setPaused(body.paused === true);
      showWelcome();
      scrollToEnd();
      watch(id);
    } catch (error) {
      showError(`${texts.unreachable} ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** The visitor's conversations, most recent first, in the side list; resolves with their ids. */
  async function refreshConversations() {
    try {
      const response = await api('conversations', { headers: { accept: 'application/json' } });
      if (!response.ok) return [];
      const body = await response.json();
      if (!conversationList) return body.conversations.map((conversation) => conversation.id);
      conversationList.replaceChildren();
      for (const conversation of body.conversations) {
        const li = document.createElement('li');
        const button = element('button', 'conversation', conversation.title || texts.conversation);
        button.type = 'button';
        button.dataset.testid = 'conversation';
        button.dataset.threadId = conversation.id;
        button.title = new Date(conversation.updatedAt).toLocaleString();
        button.addEventListener('click', () => {
          if (running || conversation.id === threadId) return;
          threadId = conversation.id;
          storage.set(THREAD_KEY, threadId);
          stopWatching();
          showError('');
          markCurrent();
          void openThread(threadId);
        });
        li.append(button);
        conversationList.append(li);
      }
      markCurrent();
      return body.conversations.map((conversation) => conversation.id);
    } catch {
      // The list is a convenience; the chat works without it.
      return [];
    }
  }

  function markCurrent() {
    if (!conversationList) return;
    for (const button of conversationList.querySelectorAll('button')) button.classList.toggle('current', button.dataset.threadId === threadId);
  }

  async function submit() {
    const text = input.value.trim();
    if ((!text && pending.length === 0) || running || !ready) return;
    setRunning(true);
    showError('');
    const files = pending;
    let parts;
    try {
      parts = await Promise.all(files.map(({ file }) => filePart(file)));
    } catch (error) {
      showError(`${texts.unreachable} ${error instanceof Error ? error.message : String(error)}`);
      setRunning(false);
      return;
    }
    input.value = '';
    autosize();
    setPending([]);
    hideWelcome();
    const runId = randomId();
    const userBubble = renderMessage('user', text);
    showLocalAttachments(userBubble, files);
    // The run id is this message's id for the agent: a reaction names it.
    userBubble.dataset.messageId = runId;

    // While a person has the conversation the agent does not answer: the waiting line says so, not "Thinking…".
    const thinking = element('li', 'thinking', texts.thinking);
    thinking.dataset.testid = 'thinking';
    if (!paused) list.append(thinking);
    thinkingLine = thinking;
    scrollToEnd();
    const run = newRun(thinking);
    try {
      const response = await api('agui', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({
          threadId,
          runId,
          // Attached files go as AG-UI image and document parts, their bytes inline (base64).
          messages: [{ id: randomId(), role: 'user', content: parts.length === 0 ? text : [...(text ? [{ type: 'text', text }] : []), ...parts] }],
          tools: [],
          context: [],
          state: {},
          forwardedProps: {},
        }),
      });
      if (!response.ok || !response.body) {
        // Refused before the run began: give the text back so it can be fixed and sent again.
        showError(await httpErrorMessage(response));
        userBubble.remove();
        input.value = text;
        setPending(files);
        autosize();
        if (list.children.length === 0) showWelcome();
        return;
      }
      await readEvents(response.body, run.handle);
      if (!run.ended) showError(texts.closedEarly);
    } catch (error) {
      showError(`${texts.unreachable} ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      run.finish();
      thinkingLine = null;
      setRunning(false);
      input.focus();
      void refreshConversations();
      // The conversation is stored now: its page hears a person who steps in. Then what waited for the run.
      watch(threadId);
      for (const event of deferred.splice(0)) onConversationEvent(event);
    }
  }

  /**
   * Listens to the open conversation's events (`conversations/events`) between runs: a person's (an operator's)
   * messages, the agent paused or resumed, a reply no run of this page carried. Read with fetch, not EventSource, so
   * the embedded chat can send its token header. A dropped stream is opened again, and the transcript read again in
   * case something was missed; a conversation the server does not have yet (404) is left until its first message.
   */
  function watch(id) {
    if (!ready || (watcher && watcher.id === id)) return;
    stopWatching();
    const abort = new AbortController();
    const current = { id, abort };
    watcher = current;
    let attempt = 0;
    const connect = async () => {
      try {
        const response = await api(`conversations/events?id=${encodeURIComponent(id)}`, { headers: { accept: 'text/event-stream' }, signal: abort.signal });
        if (!response.ok || !response.body) {
          if (watcher === current && (response.status === 404 || response.status === 403)) watcher = null;
          else retry();
          return;
        }
        const reconnected = attempt > 0;
        attempt = 0;
        await readEvents(response.body, (event) => {
          if (watcher !== current || id !== threadId) return;
          // Back after a drop: what was said meanwhile is in the transcript.
          if (event.type === 'state' && reconnected) onConversationEvent({ type: 'refresh' });
          onConversationEvent(event);
        });
        retry();
      } catch {
        retry();
      }
    };
    const retry = () => {
      if (watcher !== current || abort.signal.aborted) return;
      attempt += 1;
      setTimeout(() => void connect(), Math.min(30_000, 1000 * 2 ** Math.min(attempt, 5)));
    };
    void connect();
  }

  function stopWatching() {
    if (watcher) watcher.abort.abort();
    watcher = null;
    deferred = [];
    setPaused(false);
  }

  /** One event of the open conversation's stream. */
  function onConversationEvent(event) {
    if (!event || typeof event !== 'object') return;
    switch (event.type) {
      case 'state':
      case 'paused':
        setPaused(event.paused === true);
        break;
      case 'operator_message': {
        if (typeof event.id !== 'string' || typeof event.text !== 'string' || typeof event.author !== 'string') break;
        if (shownMessage(event.id)) break;
        hideWelcome();
        const li = renderOperatorMessage(event.id, event.author, event.text, event.at);
        // Above the run under way, whose answer follows.
        if (thinkingLine && thinkingLine.isConnected) list.insertBefore(li, thinkingLine);
        tellHost({ type: 'palaver:reply' });
        scrollToEnd();
        break;
      }
      case 'reply':
        if (typeof event.id !== 'string' || typeof event.text !== 'string') break;
        // The run under way may carry this very reply: decided once it ends.
        if (running) deferred.push(event);
        else if (!shownReplies.has(event.id) && !shownMessage(event.id)) {
          hideWelcome();
          renderMessage('assistant', event.text).dataset.messageId = event.id;
          tellHost({ type: 'palaver:reply' });
          scrollToEnd();
        }
        break;
      case 'refresh':
        if (running) deferred.push(event);
        else void openThread(threadId);
        break;
    }
  }

  /** Whether a message with this server id is on the page already; compared as data, never put into a selector. */
  function shownMessage(id) {
    return Array.from(list.children).some((li) => li.dataset.messageId === id);
  }

  /** Shows whether a person has the conversation (the agent is paused): the waiting line instead of "Thinking…". */
  function setPaused(value) {
    paused = value;
    if (paused && thinkingLine && thinkingLine.isConnected) thinkingLine.remove();
    if (!waitingLine) return;
    waitingLine.textContent = paused ? texts.waiting : '';
    waitingLine.hidden = !paused;
  }

  /** The state of one run: open assistant bubbles and tool lines by id. */
  function newRun(thinking) {
    const bubbles = new Map();
    const tools = new Map();
    const run = {
      ended: false,
      handle(event) {
        switch (event.type) {
          case 'TEXT_MESSAGE_START': {
            thinking.remove();
            typing.hide();
            const li = element('li', 'message assistant streaming', '');
            li.dataset.testid = 'assistant-message';
            li.dataset.messageId = event.messageId;
            list.append(li);
            bubbles.set(event.messageId, { li, text: '' });
            break;
          }
          case 'TEXT_MESSAGE_CONTENT': {
            const bubble = bubbles.get(event.messageId);
            if (!bubble) break;
            bubble.text += event.delta;
            bubble.li.textContent = bubble.text;
            break;
          }
          case 'TEXT_MESSAGE_END': {
            const bubble = bubbles.get(event.messageId);
            if (!bubble) break;
            bubble.li.classList.remove('streaming');
            showMarkdown(bubble.li, bubble.text);
            stamp(bubble.li);
            // The widget counts replies that come while its panel is closed (no text is passed on).
            tellHost({ type: 'palaver:reply' });
            break;
          }
          case 'CUSTOM': {
            if (!event.value || typeof event.value !== 'object') break;
            if (event.name === 'palaver.typing') {
              // The agent is writing: this says more than "Thinking…", which it replaces.
              thinking.remove();
              typing.show(event.value.seconds);
            } else if (event.name === 'palaver.tool_progress') {
              showToolProgress(event.value, tools, thinking);
            } else if (event.name === 'palaver.approval_requested') {
              showApprovalRequest(event.value);
            } else if (event.name === 'palaver.reaction') {
              react(event.value.messageId, event.value.emoji);
            } else if (event.name === 'palaver.discard') {
              // The server withdrew streamed text that is not the reply (the stream broke, or the reply changed);
              // the reply itself follows as a fresh message.
              const bubble = bubbles.get(event.value.messageId);
              if (!bubble) break;
              bubble.li.remove();
              bubbles.delete(event.value.messageId);
            }
            break;
          }
          case 'TOOL_CALL_START': {
            const li = element('li', 'tool', `🔧 ${event.toolCallName}`);
            li.dataset.testid = 'tool-line';
            list.insertBefore(li, thinking.isConnected ? thinking : null);
            tools.set(event.toolCallId, { li, name: event.toolCallName });
            break;
          }
          case 'TOOL_CALL_RESULT': {
            const tool = tools.get(event.toolCallId);
            if (!tool) break;
            const failed = Boolean(event.metadata && event.metadata.isError);
            tool.li.textContent = `🔧 ${tool.name} → ${preview(event.content)}`;
            tool.li.title = typeof event.content === 'string' ? event.content : '';
            tool.li.classList.toggle('failed', failed);
            break;
          }
          case 'RUN_ERROR':
            run.ended = true;
            typing.hide();
            // A failed turn's apology, with the error reference to quote, is already on screen as a message.
            if (!(event.metadata && event.metadata.errorId)) showError(event.message || texts.agentFailed);
            break;
          case 'RUN_FINISHED':
            run.ended = true;
            typing.hide();
            if (event.result && typeof event.result.replyMessageId === 'string') shownReplies.add(event.result.replyMessageId);
            // Stored and held: a person answers this one.
            if (event.result && event.result.status === 'held') setPaused(true);
            break;
        }
        scrollToEnd();
      },
      finish() {
        thinking.remove();
        typing.hide();
        for (const { li } of bubbles.values()) li.classList.remove('streaming');
      },
    };
    return run;
  }

  /** The "typing…" line under the messages: shown for a while, hidden by the next message or the run's end. */
  const typing = (() => {
    let timer;
    const hide = () => {
      clearTimeout(timer);
      // Emptied rather than hidden, so screen readers announce each change of the live region.
      if (typingLine) typingLine.textContent = '';
    };
    return {
      show(seconds) {
        // A page without the line (an embedder's own HTML) shows no typing.
        if (!typingLine) return;
        const shown = Number.isFinite(seconds) ? Math.min(Math.max(seconds, 1), MAX_TYPING_SECONDS) : 5;
        clearTimeout(timer);
        typingLine.textContent = texts.typing;
        timer = setTimeout(hide, shown * 1000);
      },
      hide,
    };
  })();

  /**
   * A tool call as a line for people: the tool's label while it runs ("Checking the calendar…"), then ✓, or ✗ when it
   * failed. Without showToolDetails this is all the server sends about a tool: no name, arguments or result.
   */
  function showToolProgress(value, tools, thinking) {
    const id = value.toolCallId;
    if (typeof id !== 'string') return;
    if (value.status === 'running') {
      const label = typeof value.label === 'string' && value.label !== '' ? value.label : '…';
      const li = element('li', 'tool progress', label);
      li.dataset.testid = 'tool-line';
      li.dataset.status = 'running';
      list.insertBefore(li, thinking.isConnected ? thinking : null);
      tools.set(id, { li, label });
      return;
    }
    const tool = tools.get(id);
    if (!tool || (value.status !== 'done' && value.status !== 'failed')) return;
    tool.li.dataset.status = value.status;
    tool.li.textContent = `${tool.label} ${value.status === 'failed' ? '✗' : '✓'}`;
    tool.li.classList.toggle('failed', value.status === 'failed');
  }

  /**
   * A tool call the agent asks the person to approve (`palaver.approval_requested`, or a stored question whose
   * request still waits, after a reload): Approve and Decline under the question (its text is the message just shown). A press sends a run that carries only the decision
   * (`forwardedProps.approval`); both buttons stay disabled from then on, and the card says how it ended.
   */
  function showApprovalRequest(value) {
    if (typeof value.approvalId !== 'string' || value.approvalId === '') return;
    const li = element('li', 'approval', '');
    li.dataset.testid = 'approval';
    li.dataset.approvalId = value.approvalId;
    li.setAttribute('role', 'group');
    if (typeof value.summary === 'string') li.setAttribute('aria-label', value.summary);
    const buttons = element('div', 'approval-buttons', '');
    const approve = element('button', 'approve', texts.approve);
    approve.type = 'button';
    approve.dataset.testid = 'approve-button';
    const decline = element('button', 'decline', texts.decline);
    decline.type = 'button';
    decline.dataset.testid = 'decline-button';
    buttons.append(approve, decline);
    approve.disabled = running || !ready;
    decline.disabled = running || !ready;
    const status = element('p', 'approval-status', '');
    status.dataset.testid = 'approval-status';
    status.setAttribute('aria-live', 'polite');
    status.hidden = true;
    li.append(buttons, status);
    const card = { li, approve, decline, status, id: value.approvalId, pressed: false };
    approve.addEventListener('click', () => void decide(card, 'approve'));
    decline.addEventListener('click', () => void decide(card, 'decline'));
    list.append(li);
    scrollToEnd();
  }

  /** Sends a press of an approval card as its own run, and shows the reply of the turn that goes on. */
  async function decide(card, decision) {
    if (card.pressed || running || !ready) return;
    card.pressed = true;
    card.li.dataset.state = 'pressed';
    card.approve.disabled = true;
    card.decline.disabled = true;
    card.li.querySelector(decision === 'approve' ? '.approve' : '.decline').classList.add('chosen');
    setRunning(true);
    showError('');
    const thinking = element('li', 'thinking', texts.thinking);
    thinking.dataset.testid = 'thinking';
    list.append(thinking);
    thinkingLine = thinking;
    scrollToEnd();
    const run = newRun(thinking);
    let outcome = null;
    const handle = (event) => {
      if (event.type === 'RUN_FINISHED' && event.result && typeof event.result.status === 'string') outcome = event.result.status;
      run.handle(event);
    };
    try {
      const response = await api('agui', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({
          threadId,
          runId: randomId(),
          messages: [],
          tools: [],
          context: [],
          state: {},
          forwardedProps: { approval: { id: card.id, decision } },
        }),
      });
      if (!response.ok || !response.body) {
        // Refused before anything was decided (too many runs, say): the person may press again.
        showError(await httpErrorMessage(response));
        card.pressed = false;
        delete card.li.dataset.state;
        card.approve.disabled = false;
        card.decline.disabled = false;
        card.li.querySelector('.chosen')?.classList.remove('chosen');
        return;
      }
      await readEvents(response.body, handle);
      if (!run.ended) showError(texts.closedEarly);
      const decided = outcome !== null && !outcome.startsWith('approval_');
      card.status.textContent = decided ? (decision === 'approve' ? texts.approved : texts.declined) : texts.notDecided;
      card.status.hidden = false;
      card.li.dataset.outcome = decided ? (decision === 'approve' ? 'approved' : 'declined') : 'not_decided';
    } catch (error) {
      showError(`${texts.unreachable} ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      run.finish();
      thinkingLine = null;
      setRunning(false);
      scrollToEnd();
      void refreshConversations();
      for (const event of deferred.splice(0)) onConversationEvent(event);
    }
  }

  /** Puts `emoji` on the person's message `messageId` (its run id); a later reaction replaces an earlier one. */
  function react(messageId, emoji) {
    if (typeof messageId !== 'string' || typeof emoji !== 'string' || emoji === '' || emoji.length > MAX_REACTION_CHARS) return;
    // Compared as data, never put into a selector: the id comes from the server and, before that, the model.
    const bubble = Array.from(list.querySelectorAll('.message.user')).find((li) => li.dataset.messageId === messageId);
    if (!bubble) return;
    let badge = bubble.querySelector('.reaction');
    if (!badge) {
      badge = element('span', 'reaction', '');
      badge.dataset.testid = 'reaction';
      badge.setAttribute('role', 'img');
      bubble.append(badge);
      bubble.classList.add('has-reaction');
    }
    badge.textContent = emoji;
    badge.setAttribute('aria-label', `Reaction: ${emoji}`);
  }

  /** Reads a `text/event-stream` body and calls `onEvent` with each JSON `data:` payload. */
  async function readEvents(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, '\n');
      let boundary;
      while ((boundary = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, boundary);
        buffer = buffer.slice(boundary + 2);
        const data = block
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
          .join('\n');
        if (data) onEvent(JSON.parse(data));
      }
    }
  }

  async function httpErrorMessage(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error.message;
    } catch {
      // Not JSON: fall through to the status line.
    }
    return `The server answered ${response.status} ${response.statusText}.`;
  }

  /**
   * A person's (an operator's) message: named by the label the server chose, its text shown as plain text (never as
   * HTML or Markdown).
   */
  function renderOperatorMessage(id, author, text, at) {
    const li = element('li', 'message assistant operator', '');
    li.dataset.testid = 'operator-message';
    li.dataset.messageId = id;
    const name = element('span', 'author', author);
    name.dataset.testid = 'operator-author';
    const body = element('span', 'text', text);
    body.dataset.testid = 'operator-text';
    li.append(name, body);
    stamp(li, at);
    list.append(li);
    return li;
  }

  function renderMessage(role, text, at) {
    const li = element('li', `message ${role}`, text);
    stamp(li, at);
    li.dataset.testid = role === 'user' ? 'user-message' : 'assistant-message';
    if (role === 'assistant') showMarkdown(li, text);
    list.append(li);
    return li;
  }

  /**
   * Replaces a finished agent bubble's text with its Markdown rendering. The text comes from the model, so raw HTML
   * is off (a `<script>` is shown as text), links go only to http(s) and mailto and open in a new tab without a
   * referrer, and images are not fetched. Without the renderer the text stays plain.
   */
  function showMarkdown(li, text) {
    if (!markdown) return;
    li.innerHTML = markdown.render(text).trimEnd();
    li.classList.add('markdown');
  }

  function startThread() {
    const id = randomId();
    storage.set(THREAD_KEY, id);
    return id;
  }

  function setRunning(value) {
    running = value;
    send.disabled = value || !ready;
    newThread.disabled = value || !ready;
    if (attachButton) attachButton.disabled = value || !ready;
    if (welcome) for (const button of welcome.querySelectorAll('button')) button.disabled = value || !ready;
    // An approval card waits while a run is under way; a pressed one stays disabled.
    for (const card of list.querySelectorAll('.approval:not([data-state="pressed"]) button')) card.disabled = value || !ready;
  }

  /**
   * The greeting and suggested prompts the server wrote into the page (`channels.web.greeting`,
   * `suggestedPrompts`), in the first of the browser's languages the config has, else the agent's, else the first
   * given. Shown only while the conversation is empty; a prompt clicked is sent as the person's message.
   */
  function showWelcome() {
    if (!welcome) return;
    const config = welcomeConfig();
    if (!config || list.children.length > 0) {
      hideWelcome();
      return;
    }
    const greeting = localised(config.greeting, config.language);
    const prompts = localised(config.prompts, config.language);
    const greetingLine = document.getElementById('greeting');
    if (greetingLine) {
      greetingLine.textContent = typeof greeting === 'string' ? greeting : '';
      greetingLine.hidden = typeof greeting !== 'string';
    }
    const box = document.getElementById('prompts');
    if (box) {
      box.replaceChildren();
      box.setAttribute('role', 'group');
      box.setAttribute('aria-label', texts.suggestions);
      for (const prompt of Array.isArray(prompts) ? prompts : []) {
        if (typeof prompt !== 'string' || prompt === '') continue;
        const button = element('button', 'prompt', prompt);
        button.type = 'button';
        button.dataset.testid = 'suggested-prompt';
        button.disabled = running || !ready;
        button.addEventListener('click', () => {
          if (running || !ready) return;
          input.value = prompt;
          void submit();
        });
        box.append(button);
      }
    }
    welcome.hidden = false;
  }

  function hideWelcome() {
    if (welcome) welcome.hidden = true;
  }

  function welcomeConfig() {
    try {
      const raw = document.documentElement.dataset.welcome;
      return raw ? JSON.parse(raw) : null;
    } catch {
      return null;
    }
  }

  /** A config value that is one value, or one per language tag. */
  function localised(value, fallbackLanguage) {
    if (value === undefined || value === null || typeof value === 'string' || Array.isArray(value)) return value;
    const keys = Object.keys(value);
    const find = (tag) => {
      if (!tag) return undefined;
      const lower = String(tag).toLowerCase();
      return keys.find((key) => key.toLowerCase() === lower) || keys.find((key) => key.toLowerCase() === lower.split('-')[0]);
    };
    for (const tag of navigator.languages || [navigator.language]) {
      const key = find(tag);
      if (key) return value[key];
    }
    const key = find(fallbackLanguage) || keys[0];
    return key === undefined ? undefined : value[key];
  }

  /** What the server lets a person attach (checked again there, by the bytes); null: the page offers no attaching. */
  function attachmentRules() {
    try {
      const raw = document.documentElement.dataset.attachments;
      const rules = raw ? JSON.parse(raw) : null;
      return rules && Array.isArray(rules.types) ? rules : null;
    } catch {
      return null;
    }
  }

  function setUpAttaching() {
    if (!attachRules || !attachButton || !fileInput) return;
    attachButton.hidden = false;
    attachButton.setAttribute('aria-label', texts.attach);
    attachButton.title = texts.attach;
    fileInput.accept = attachRules.types.join(',');
    attachButton.addEventListener('click', () => fileInput.click());
    fileInput.addEventListener('change', () => {
      addFiles(Array.from(fileInput.files || []));
      fileInput.value = '';
    });
  }

  /** Adds chosen files to the next message, refusing here what the server would refuse (it checks again). */
  function addFiles(files) {
    const next = [...pending];
    for (const file of files) {
      if (next.length >= attachRules.maxFiles) {
        showError(texts.tooManyFiles.replace('{count}', String(attachRules.maxFiles)));
        break;
      }
      if (!attachRules.types.includes(file.type)) {
        showError(texts.fileType.replace('{name}', file.name));
        continue;
      }
      if (file.size > attachRules.maxFileBytes) {
        showError(texts.fileTooLarge.replace('{name}', file.name).replace('{size}', formatBytes(attachRules.maxFileBytes)));
        continue;
      }
      next.push({ file, url: file.type.startsWith('image/') ? URL.createObjectURL(file) : null });
    }
    setPending(next);
    input.focus();
  }

  /** Shows the files waiting to go with the next message, each with a button that removes it. */
  function setPending(files) {
    pending = files;
    if (!pendingList) return;
    pendingList.replaceChildren();
    for (const entry of files) {
      const li = element('li', 'pending-file', '');
      li.dataset.testid = 'pending-file';
      if (entry.url) {
        const img = document.createElement('img');
        img.src = entry.url;
        img.alt = '';
        li.append(img);
      }
      li.append(element('span', 'file-name', entry.file.name));
      const remove = element('button', 'remove-file', '✕');
      remove.type = 'button';
      remove.setAttribute('aria-label', `${texts.removeFile} ${entry.file.name}`);
      remove.addEventListener('click', () => setPending(pending.filter((other) => other !== entry)));
      li.append(remove);
      pendingList.append(li);
    }
    pendingList.hidden = files.length === 0;
  }

  /** A file as an AG-UI 1.0 content part with its bytes inline. */
  function filePart(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        resolve({
          type: file.type.startsWith('image/') ? 'image' : 'document',
          source: { type: 'data', value: url.slice(url.indexOf(',') + 1), mimeType: file.type },
          metadata: { filename: file.name },
        });
      };
      reader.onerror = () => reject(reader.error || new Error('The file could not be read.'));
      reader.readAsDataURL(file);
    });
  }

  /** The files of a message just sent, from the browser's own copies. */
  function showLocalAttachments(li, files) {
    if (files.length === 0) return;
    const box = attachmentBox(li);
    for (const { file, url } of files) {
      if (url) box.append(attachedImage(url, file.name));
      else box.append(fileLabel(file.name));
    }
  }

  /**
   * The files of a stored message, fetched from the server as the current caller (so the embedded chat sends its
   * token or visitor header too) and shown from the browser's copy of the bytes.
   */
  function showStoredAttachments(li, conversationId, attachments) {
    if (attachments.length === 0) return;
    const box = attachmentBox(li);
    for (const attachment of attachments) {
      if (!attachment || typeof attachment.id !== 'string') continue;
      const name = typeof attachment.name === 'string' ? attachment.name : '';
      const url = `conversations/attachment?conversation=${encodeURIComponent(conversationId)}&id=${encodeURIComponent(attachment.id)}`;
      if (attachment.kind === 'image') {
        const img = attachedImage('', name);
        box.append(img);
        void api(url)
          .then((response) => (response.ok ? response.blob() : null))
          .then((blob) => {
            if (blob) img.src = URL.createObjectURL(blob);
          })
          .catch(() => {});
      } else {
        const link = fileLabel(name);
        link.addEventListener('click', () => {
          void api(url)
            .then((response) => (response.ok ? response.blob() : null))
            .then((blob) => {
              if (!blob) return;
              const a = document.createElement('a');
              a.href = URL.createObjectURL(blob);
              a.download = name || 'file';
              a.click();
            })
            .catch(() => {});
        });
        box.append(link);
      }
    }
  }

  function attachmentBox(li) {
    const box = element('div', 'attachments', '');
    li.append(box);
    return box;
  }

  function attachedImage(url, name) {
    const img = document.createElement('img');
    img.className = 'attached-image';
    img.dataset.testid = 'attached-image';
    img.alt = name || texts.image;
    if (url) img.src = url;
    return img;
  }

  function fileLabel(name) {
    const button = element('button', 'attached-file', `📄 ${name}`);
    button.type = 'button';
    button.dataset.testid = 'attached-file';
    return button;
  }

  function formatBytes(bytes) {
    return bytes >= 1024 * 1024 ? `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
  }

  /**
   * The page in the widget's frame (served at /embed). The server names the sites allowed to frame it (the same list
   * its frame-ancestors policy names); a user token is taken only from the parent window, and only when the parent's
   * origin is one of them. Messages to the parent carry no conversation data.
   */
  function setUpEmbedding() {
    document.documentElement.classList.add('embedded');
    const close = document.getElementById('close-embed');
    if (close) {
      close.hidden = false;
      close.addEventListener('click', () => tellHost({ type: 'palaver:close' }));
    }
    document.addEventListener('keydown', (event) => {
      // Escape in the widget's frame closes the widget (the host page cannot see keys typed in the frame), unless it
      // closed the conversation list (chat-drawer.js, which runs first, then marks it handled).
      if (event.key === 'Escape' && !event.defaultPrevented) tellHost({ type: 'palaver:close' });
    });
    window.addEventListener('message', (event) => {
      if (window.parent === window || event.source !== window.parent || !embed.origins.includes(event.origin)) return;
      const data = event.data;
      if (!data || typeof data !== 'object') return;
      if (data.type === 'palaver:token' && typeof data.token === 'string' && data.token.length > 0 && data.token.length <= MAX_TOKEN_CHARS) {
        if (data.token === userToken) return;
        const switched = ready;
        userToken = data.token;
        ready = true;
        // Another person may now be talking: show their list and leave a conversation that is not theirs.
        if (!running) setRunning(false);
        begin(switched);
      } else if (data.type === 'palaver:focus') {
        input.focus();
      }
    });
    tellHost({ type: 'palaver:ready' });
  }

  /** A message to the embedding page. Sent to any origin: it carries only its type, never a conversation's text. */
  function tellHost(message) {
    if (window.parent !== window) window.parent.postMessage(message, '*');
  }

  /** What the server wrote into the page when it serves it for embedding (/embed), or null on the plain page. */
  function embedding() {
    const origins = document.documentElement.dataset.embedOrigins;
    if (origins === undefined) return null;
    const params = new URLSearchParams(location.search);
    return {
      origins: origins.split(' ').filter(Boolean),
      awaitToken: params.get('auth') === 'token',
      accent: params.get('accent'),
      visitor: document.documentElement.dataset.visitor || null,
    };
  }

  function showError(message) {
    errorLine.textContent = message;
    errorLine.hidden = !message;
  }

  function preview(content) {
    const text = (typeof content === 'string' ? content : JSON.stringify(content)).replace(/\s+/g, ' ').trim();
    return text.length > TOOL_RESULT_PREVIEW ? `${text.slice(0, TOOL_RESULT_PREVIEW - 1)}…` : text;
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    node.className = className;
    node.textContent = text;
    return node;
  }

  function autosize() {
    input.style.height = 'auto';
    input.style.height = `${Math.min(input.scrollHeight, 160)}px`;
  }

  function scrollToEnd() {
    list.scrollTop = list.scrollHeight;
  }

  /**
   * Shows when a message was written (`at` from the transcript, now for a live one) in local time. Kept in an
   * attribute the style sheet displays, so the bubble's text stays the message alone.
   */
  function stamp(li, at) {
    const date = at ? new Date(at) : new Date();
    if (Number.isNaN(date.getTime())) return;
    li.dataset.time = date.toLocaleTimeString(texts.language, { hour: '2-digit', minute: '2-digit' });
    li.title = date.toLocaleString(texts.language);
  }

  /** The page's texts in the first of the browser's languages that chat-texts.js has, else English. */
  function pageTexts() {
    const table = window.palaverTexts || {};
    for (const tag of navigator.languages || [navigator.language]) {
      const language = String(tag).toLowerCase().split('-')[0];
      if (table[language]) return { ...table.en, ...table[language], language };
    }
    return { ...table.en, language: 'en' };
  }

  /** Puts the chosen texts on the page's fixed elements (an embedder's own HTML may lack some of them). */
  function applyTexts() {
    if (!texts.send) return;
    document.documentElement.lang = texts.language;
    const set = (id, apply) => {
      const node = document.getElementById(id);
      if (node) apply(node);
    };
    set('conversations-title', (node) => (node.textContent = texts.conversations));
    set('sidebar', (node) => node.setAttribute('aria-label', texts.conversations));
    set('new-thread', (node) => {
      node.textContent = texts.newChat;
      node.title = texts.newChatTitle;
    });
    set('input', (node) => {
      node.placeholder = texts.placeholder;
      node.setAttribute('aria-label', texts.message);
    });
    set('send', (node) => (node.textContent = texts.send));
    set('menu', (node) => {
      node.setAttribute('aria-label', texts.showConversations);
      node.title = texts.showConversations;
    });
    set('close-embed', (node) => {
      node.setAttribute('aria-label', texts.closeChat);
      node.title = texts.closeChat;
    });
  }

  /**
   * The accent colour the server wrote into the page, or the one the widget asked for in the frame's address
   * (checked again: only a hex colour becomes a style).
   */
  function applyAccent() {
    const accent = (embed && embed.accent) || document.documentElement.dataset.accent;
    if (!accent || !/^#[0-9a-f]{3,8}$/i.test(accent)) return;
    document.documentElement.style.setProperty('--accent', accent);
    document.documentElement.style.setProperty('--user-bg', accent);
    // Text on the accent (the header, the person's bubbles, Send) stays readable on a light accent too.
    document.documentElement.style.setProperty('--accent-text', isLight(accent) ? '#111111' : '#ffffff');
  }

  /** Whether a hex colour is light enough that white text on it would be hard to read (WCAG relative luminance). */
  function isLight(hex) {
    const digits = hex.slice(1);
    const full = digits.length <= 4 ? digits.replace(/./g, (d) => d + d) : digits;
    const [r, g, b] = [0, 2, 4].map((i) => {
      const c = parseInt(full.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.4;
  }

  /** markdown-it (loaded before this file) with only what is safe for a model's text; null when it did not load. */
  function markdownRenderer() {
    if (typeof window.markdownit !== 'function') return null;
    const md = window.markdownit({ html: false, linkify: true });
    md.disable('image');
    md.validateLink = (url) => /^(https?:|mailto:)/i.test(url.trim());
    md.renderer.rules.link_open = (tokens, index, options, env, self) => {
      tokens[index].attrSet('target', '_blank');
      tokens[index].attrSet('rel', 'noopener noreferrer');
      return self.renderToken(tokens, index, options);
    };
    return md;
  }

  /**
   * localStorage, or memory where the browser denies it (a third-party frame under blocked third-party storage throws
   * on every access): the chat then forgets the open conversation when the page goes, and works all the same.
   */
  function pageStorage() {
    const memory = new Map();
    let local = null;
    try {
      local = window.localStorage;
      local.getItem(THREAD_KEY);
    } catch {
      local = null;
    }
    const attempt = (use, fallback) => {
      if (local) {
        try {
          return use(local);
        } catch {
          // Denied or full now: memory from here on.
          local = null;
        }
      }
      return fallback();
    };
    return {
      get: (key) =>
        attempt(
          (s) => s.getItem(key),
          () => (memory.has(key) ? memory.get(key) : null),
        ),
      set: (key, value) =>
        attempt(
          (s) => s.setItem(key, value),
          () => void memory.set(key, value),
        ),
      remove: (key) =>
        attempt(
          (s) => s.removeItem(key),
          () => void memory.delete(key),
        ),
      keys: () =>
        attempt(
          (s) => Object.keys(s),
          () => [...memory.keys()],
        ),
    };
  }

  /** crypto.randomUUID exists only in secure contexts; a LAN address over plain http is not one. */
  function randomId() {
    if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }
})();
