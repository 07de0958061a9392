// Palaver chat widget: one <script src="https://palaver.example.com/widget.js" data-…></script> on a team's own site
// shows a launcher button that opens the chat in a frame (the chat page at /embed). The frame keeps the chat apart
// from the host page's styles and scripts; the launcher lives in a shadow root for the same reason.
//
// Options (data- attributes of the script tag):
//   data-position="bottom-right" | "bottom-left"   where the launcher sits (default bottom-right)
//   data-accent-color="#c2185b"                     the launcher's and the chat's accent (a hex colour); without it
//                                                   the server's channels.web.accentColor
//   data-open="true"                                open the chat when the page loads
//   data-user-token="<JWT>"                         the signed token of the site's logged-in user
// And from the page's own scripts: Palaver.open(), Palaver.close(), Palaver.toggle(), Palaver.setUserToken(jwt).
//
// The user token goes to the frame by postMessage addressed to the chat's origin alone, never in its address (which
// servers and proxies log); the frame takes it only from its parent page, and only when the parent's origin is one
// the Palaver server allows (channels.web.embed.allowedOrigins).
'use strict';

(() => {
  const script = document.currentScript;
  if (!script || !script.src || (window.Palaver && window.Palaver.widget)) return;

  const LAUNCHER_TEXTS = {
    en: { open: 'Open chat', close: 'Close chat', title: 'Chat', failed: 'The chat could not be loaded. Please try again later.', unread: 'unread' },
    ru: { open: 'Открыть чат', close: 'Закрыть чат', title: 'Чат', failed: 'Не удалось загрузить чат. Попробуйте позже.', unread: 'непрочитанных' },
    uk: { open: 'Відкрити чат', close: 'Закрити чат', title: 'Чат', failed: 'Не вдалося завантажити чат. Спробуйте пізніше.', unread: 'непрочитаних' },
    zh: { open: '打开聊天', close: '关闭聊天', title: '聊天', failed: '聊天无法加载，请稍后再试。', unread: '条未读' },
  };
  // channels.web.accentColor, written in by the server that serves this file (empty when none is configured).
  const CONFIGURED_ACCENT = '';
  // How long the chat's frame may take to say it is ready before the panel says it could not be loaded (the server
  // is unreachable, or refuses to be framed by this site: channels.web.embed.allowedOrigins).
  const READY_TIMEOUT_MS = 15_000;
  const HEX_COLOUR = /^#([0-9a-f]{3}|[0-9a-f]{4}|[0-9a-f]{6}|[0-9a-f]{8})$/i;

  const chatUrl = new URL('embed', script.src);
  const chatOrigin = chatUrl.origin;
  const options = script.dataset;
  const side = options.position === 'bottom-left' ? 'left' : 'right';
  const accent = HEX_COLOUR.test(options.accentColor || '') ? options.accentColor : HEX_COLOUR.test(CONFIGURED_ACCENT) ? CONFIGURED_ACCENT : '';
  const texts = launcherTexts();
  let userToken = typeof options.userToken === 'string' && options.userToken !== '' ? options.userToken : null;
  let frame = null;
  let frameReady = false;
  let readyTimer;
  let failure = null;
  let open = false;
  /** Replies that came while the panel was closed; shown on the launcher, cleared when it opens. */
  let unread = 0;

  const host = document.createElement('div');
  host.setAttribute('data-palaver-widget', '');
  const root = host.attachShadow({ mode: 'open' });
  addStyles(root);

  const panel = document.createElement('div');
  panel.className = `panel ${side}`;
  panel.id = 'palaver-panel';
  panel.hidden = true;
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-label', texts.title);
  panel.dataset.testid = 'widget-panel';

  const launcher = document.createElement('button');
  launcher.type = 'button';
  launcher.className = `launcher ${side}`;
  launcher.dataset.testid = 'widget-launcher';
  launcher.setAttribute('aria-controls', 'palaver-panel');
  const badge = document.createElement('span');
  badge.className = `badge ${side}`;
  badge.dataset.testid = 'widget-unread';
  badge.setAttribute('aria-hidden', 'true');
  badge.hidden = true;
  root.append(panel, launcher, badge);
  showState();

  launcher.addEventListener('click', () => setOpen(!open));
  window.addEventListener('message', (event) => {
    // Only the chat's own frame speaks to the widget; what it says carries no conversation data.
    if (!frame || event.source !== frame.contentWindow || event.origin !== chatOrigin) return;
    const data = event.data;
    if (!data || typeof data !== 'object') return;
    if (data.type === 'palaver:ready') {
      frameReady = true;
      clearTimeout(readyTimer);
      if (failure) failure.remove();
      sendToken();
      if (open) frame.contentWindow.postMessage({ type: 'palaver:focus' }, chatOrigin);
    } else if (data.type === 'palaver:close') {
      setOpen(false);
    } else if (data.type === 'palaver:reply' && !open) {
      unread += 1;
      showState();
    }
  });

  const mount = () => {
    document.body.append(host);
    if (options.open === 'true' || options.open === '') setOpen(true);
  };
  if (document.body) mount();
  else document.addEventListener('DOMContentLoaded', mount, { once: true });

  window.Palaver = Object.freeze({
    widget: true,
    open: () => setOpen(true),
    close: () => setOpen(false),
    toggle: () => setOpen(!open),
    /** Hands the chat the signed token of the site's logged-in user (a fresh one before the last expires). */
    setUserToken(token) {
      if (typeof token !== 'string' || token === '') return;
      userToken = token;
      sendToken();
    },
  });

  function setOpen(value) {
    if (value === open) return;
    open = value;
    if (open) unread = 0;
    if (open && !frame) createFrame();
    panel.hidden = !open;
    showState();
    if (open) {
      if (frameReady) frame.contentWindow.postMessage({ type: 'palaver:focus' }, chatOrigin);
    } else {
      launcher.focus();
    }
  }

  /** The frame is made on first open: a page that never opens the chat loads nothing more. */
  function createFrame() {
    const url = new URL(chatUrl);
    if (accent) url.searchParams.set('accent', accent);
    // Tells the chat to wait for the token instead of starting as an anonymous visitor; the token itself follows
    // by postMessage.
    if (userToken) url.searchParams.set('auth', 'token');
    frame = document.createElement('iframe');
    frame.src = url.href;
    frame.title = texts.title;
    frame.dataset.testid = 'widget-frame';
    frame.setAttribute('referrerpolicy', 'origin');
    panel.append(frame);
    // The host page cannot see into the frame: a frame that never says it is ready failed to load, and the visitor is
    // told so here instead of facing an empty panel.
    readyTimer = setTimeout(showFailure, READY_TIMEOUT_MS);
  }

  function showFailure() {
    if (frameReady || failure) return;
    failure = document.createElement('p');
    failure.className = 'failure';
    failure.setAttribute('role', 'alert');
    failure.dataset.testid = 'widget-error';
    failure.textContent = texts.failed;
    panel.prepend(failure);
  }

  /** The token to the chat's frame, addressed to the chat's origin: a frame navigated elsewhere does not get it. */
  function sendToken() {
    if (!frame || !frameReady || !userToken) return;
    frame.contentWindow.postMessage({ type: 'palaver:token', token: userToken }, chatOrigin);
  }

  function showState() {
    launcher.setAttribute('aria-expanded', String(open));
    // The count is part of the button's name, so a screen reader says it too.
    const label = open ? texts.close : unread > 0 ? `${texts.open} (${unread} ${texts.unread})` : texts.open;
    launcher.setAttribute('aria-label', label);
    launcher.title = label;
    badge.textContent = unread > 9 ? '9+' : String(unread);
    badge.hidden = open || unread === 0;
    launcher.replaceChildren(open ? icon('M6 6l12 12M18 6L6 18') : icon('M4 4h16v12H8l-4 4z'));
  }

  function icon(path) {
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    const line = document.createElementNS('http://www.w3.org/2000/svg', 'path');
    line.setAttribute('d', path);
    svg.append(line);
    return svg;
  }

  function launcherTexts() {
    for (const tag of navigator.languages || [navigator.language]) {
      const language = String(tag).toLowerCase().split('-')[0];
      if (LAUNCHER_TEXTS[language]) return LAUNCHER_TEXTS[language];
    }
    return LAUNCHER_TEXTS.en;
  }

  /** Whether white text on a hex colour would be hard to read (WCAG relative luminance). */
  function isLight(hex) {
    const digits = hex.slice(1);
    const full = digits.length <= 4 ? digits.replace(/./g, (d) => d + d) : digits;
    const [r, g, b] = [0, 2, 4].map((i) => {
      const c = parseInt(full.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.4;
  }

  /** Styles inside the shadow root: the host page's rules do not reach in, and these do not leak out. */
  function addStyles(shadow) {
    const colour = accent || '#2f6feb';
    const onColour = isLight(colour) ? '#111' : '#fff';
    const css = `
      :host { all: initial; }
      .launcher {
        position: fixed; bottom: 20px; z-index: 2147483000; width: 56px; height: 56px; padding: 14px;
        border: none; border-radius: 50%; background: ${colour}; color: ${onColour}; cursor: pointer;
        box-shadow: 0 4px 14px rgba(0, 0, 0, 0.25);
      }
      .launcher:focus-visible { outline: 3px solid ${colour}; outline-offset: 3px; }
      .launcher svg { width: 28px; height: 28px; fill: none; stroke: currentColor; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
      .right { right: 20px; }
      .left { left: 20px; }
      .badge {
        position: fixed; bottom: 58px; z-index: 2147483001; min-width: 20px; height: 20px; padding: 0 6px;
        border-radius: 10px; background: #d93025; color: #fff; border: 2px solid #fff; box-sizing: border-box;
        font: 700 12px/16px system-ui, sans-serif; text-align: center; pointer-events: none;
      }
      .badge.right { right: 16px; }
      .badge.left { left: 56px; }
      .badge[hidden] { display: none; }
      .panel {
        position: fixed; bottom: 88px; z-index: 2147483000; width: 380px; height: min(600px, calc(100vh - 108px));
        border-radius: 14px; overflow: hidden; background: #fff; box-shadow: 0 8px 32px rgba(0, 0, 0, 0.25);
      }
      .panel[hidden] { display: none; }
      .panel iframe { width: 100%; height: 100%; border: 0; display: block; }
      .failure {
        position: absolute; inset: 0 0 auto 0; margin: 0; padding: 16px; background: #fff4f4; color: #8a1c1c;
        font: 15px/1.4 system-ui, sans-serif; border-bottom: 1px solid #f0c4c4;
      }
      @media (max-width: 480px) {
        .panel { inset: 0; width: auto; height: auto; border-radius: 0; }
        .panel:not([hidden]) + .launcher { display: none; }
      }`;
    if ('adoptedStyleSheets' in shadow && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
      // A constructed sheet is not inline style: it works under a host page's strict style-src too.
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(css);
      shadow.adoptedStyleSheets = [sheet];
    } else {
      const style = document.createElement('style');
      style.textContent = css;
      shadow.append(style);
    }
  }
})();
