// The conversation list as a drawer on narrow screens (the style sheet shows it as a column on wide ones): the menu
// button opens it over the chat; choosing a conversation, Escape, a tap beside it or the button again close it.
// While it is open the chat behind it is inert, so keyboard focus stays in the list; closing gives focus back to the
// button. Loaded before chat.js, whose conversation buttons it closes on by listening on the list itself.
'use strict';

(() => {
  const layout = document.querySelector('.layout');
  const menuButton = document.getElementById('menu');
  const backdrop = document.getElementById('backdrop');
  const sidebar = document.getElementById('sidebar');
  const list = document.getElementById('conversations');
  const chat = document.getElementById('chat');
  // An embedder's own HTML may have no drawer.
  if (!layout || !menuButton || !sidebar || !list) return;

  menuButton.addEventListener('click', () => (isOpen() ? close() : open()));
  if (backdrop) backdrop.addEventListener('click', () => close());
  list.addEventListener('click', (event) => {
    if (event.target instanceof Element && event.target.closest('button')) close();
  });
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || !isOpen()) return;
    // Handled: the embedded page's own Escape (closing the widget) leaves it alone.
    event.preventDefault();
    close();
  });
  // Widened past the drawer's breakpoint (a rotated phone): the list is a plain column again.
  const narrow = window.matchMedia('(max-width: 700px)');
  narrow.addEventListener('change', () => {
    if (!narrow.matches) close(false);
  });

  function isOpen() {
    return layout.classList.contains('list-open');
  }

  function open() {
    layout.classList.add('list-open');
    menuButton.setAttribute('aria-expanded', 'true');
    if (chat) chat.inert = true;
    const current = list.querySelector('button.current') || list.querySelector('button');
    (current || sidebar).focus();
  }

  function close(restoreFocus = true) {
    if (!isOpen()) return;
    layout.classList.remove('list-open');
    menuButton.setAttribute('aria-expanded', 'false');
    if (chat) chat.inert = false;
    if (restoreFocus) menuButton.focus();
  }
})();
