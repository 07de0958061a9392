// Palaver web chat: sends AG-UI RunAgentInput to /agui and renders the SSE event stream. No build step.
'use strict';

(() => {
  const THREAD_KEY = 'palaver.threadId';
  const API_KEY = 'palaver.apiKey';
  const TRANSCRIPT_PREFIX = 'palaver.transcript.';
  const MAX_SAVED_ENTRIES = 200;
  const TOOL_RESULT_PREVIEW = 80;

  const list = document.getElementById('messages');
  const form = document.getElementById('composer');
  const input = document.getElementById('input');
  const send = document.getElementById('send');
  const errorLine = document.getElementById('error');
  const newThread = document.getElementById('new-thread');

  // A server with PALAVER_API_KEY needs it from every client: open the page once as /#key=<key> and it is kept
  // in this browser (the fragment never reaches server logs) and removed from the address bar.
  const keyInFragment = new URLSearchParams(location.hash.slice(1)).get('key');
  if (keyInFragment) {
    localStorage.setItem(API_KEY, keyInFragment);
    history.replaceState(null, '', location.pathname + location.search);
  }
  let threadId = localStorage.getItem(THREAD_KEY) || startThread();
  let transcript = loadTranscript();
  let running = false;

  transcript.forEach(renderEntry);
  scrollToEnd();

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void submit();
  });
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
    transcript = [];
    list.replaceChildren();
    showError('');
    input.focus();
  });

  async function submit() {
    const text = input.value.trim();
    if (!text || running) return;
    setRunning(true);
    showError('');
    input.value = '';
    autosize();
    const userEntry = { kind: 'user', text };
    const userBubble = addEntry(userEntry);

    const thinking = element('li', 'thinking', 'Thinking…');
    list.append(thinking);
    scrollToEnd();
    const run = newRun(thinking);
    try {
      const response = await fetch('agui', {
        method: 'POST',
        headers: authHeaders({ 'content-type': 'application/json', accept: 'text/event-stream' }),
        body: JSON.stringify({
          threadId,
          runId: randomId(),
          messages: [{ id: randomId(), role: 'user', content: text }],
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
        transcript = transcript.filter((entry) => entry !== userEntry);
        saveTranscript();
        input.value = text;
        autosize();
        return;
      }
      await readEvents(response.body, run.handle);
      if (!run.ended) showError('The connection closed before the answer was complete. Please try again.');
    } catch (error) {
      showError(`Could not reach the server: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      run.finish();
      setRunning(false);
      input.focus();
    }
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
            bubble.entry = { kind: 'assistant', text: bubble.text };
            saveEntry(bubble.entry);
            break;
          }
          case 'CUSTOM': {
            // The server withdrew streamed text that is not the reply (the stream broke, or the reply changed);
            // the reply itself follows as a fresh message.
            if (event.name !== 'palaver.discard' || !event.value) break;
            const bubble = bubbles.get(event.value.messageId);
            if (!bubble) break;
            bubble.li.remove();
            bubbles.delete(event.value.messageId);
            if (bubble.entry) {
              transcript = transcript.filter((entry) => entry !== bubble.entry);
              saveTranscript();
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
            saveEntry({ kind: 'tool', text: tool.li.textContent, failed });
            break;
          }
          case 'RUN_ERROR':
            run.ended = true;
            showError(event.message || 'The agent could not answer.');
            break;
          case 'RUN_FINISHED':
            run.ended = true;
            break;
        }
        scrollToEnd();
      },
      finish() {
        thinking.remove();
        for (const { li } of bubbles.values()) li.classList.remove('streaming');
      },
    };
    return run;
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

  function addEntry(entry) {
    const li = renderEntry(entry);
    saveEntry(entry);
    return li;
  }

  function renderEntry(entry) {
    if (entry.kind === 'tool') {
      const li = element('li', entry.failed ? 'tool failed' : 'tool', entry.text);
      li.dataset.testid = 'tool-line';
      list.append(li);
      return li;
    }
    const li = element('li', `message ${entry.kind}`, entry.text);
    li.dataset.testid = entry.kind === 'user' ? 'user-message' : 'assistant-message';
    list.append(li);
    return li;
  }

  function saveEntry(entry) {
    transcript.push(entry);
    transcript = transcript.slice(-MAX_SAVED_ENTRIES);
    saveTranscript();
  }

  function saveTranscript() {
    try {
      localStorage.setItem(TRANSCRIPT_PREFIX + threadId, JSON.stringify(transcript));
    } catch {
      // Storage full or disabled: the conversation still works, it just won't survive a reload.
    }
  }

  function loadTranscript() {
    try {
      const saved = JSON.parse(localStorage.getItem(TRANSCRIPT_PREFIX + threadId) || '[]');
      return Array.isArray(saved) ? saved : [];
    } catch {
      return [];
    }
  }

  function startThread() {
    const previous = localStorage.getItem(THREAD_KEY);
    if (previous) localStorage.removeItem(TRANSCRIPT_PREFIX + previous);
    const id = randomId();
    localStorage.setItem(THREAD_KEY, id);
    return id;
  }

  function setRunning(value) {
    running = value;
    send.disabled = value;
    newThread.disabled = value;
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

  /** crypto.randomUUID exists only in secure contexts; a LAN address over plain http is not one. */
  function authHeaders(headers) {
    const key = localStorage.getItem(API_KEY);
    return key ? { ...headers, authorization: `Bearer ${key}` } : headers;
  }

  function randomId() {
    if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  }
})();
