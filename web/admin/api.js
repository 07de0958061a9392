// Talks to the admin API with the session cookie (HttpOnly: this page never sees it) and the CSRF token that came
// with the sign-in. Every answer is JSON shaped as src/admin/api-contract.ts says.

let csrfToken = null;

/** A refusal from the server, with its `error.code`. */
export class ApiError extends Error {
  /** `details`: the error's other fields (a refused take names who has the conversation: `assignedTo`). */
  constructor(status, code, message, details = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Fired on window when the server no longer knows this session (expired, signed out elsewhere, token changed). */
export const SIGNED_OUT = 'palaver:signed-out';

async function request(method, path, { body, headers = {} } = {}) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  // The server knows who signed in: the operators' audit names them without the page saying so.
  if (method !== 'GET' && csrfToken) init.headers['x-csrf-token'] = csrfToken;
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached; check that Palaver is running.');
  }
  if (response.status === 204) return null;
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    if (response.status === 401 && path !== '/admin/session') window.dispatchEvent(new Event(SIGNED_OUT));
    const error = data && data.error ? data.error : { code: `http_${response.status}`, message: `The server answered ${response.status}.` };
    const { code, message, ...details } = error;
    throw new ApiError(response.status, code, message, details);
  }
  return data;
}

export const get = (path) => request('GET', path);
export const post = (path, body, headers) => request('POST', path, { body: body ?? {}, headers });

/** Signs in with an operator's token or the admin token; resolves once the session cookie is set. */
export async function signIn(token) {
  const session = await request('POST', '/admin/session', { body: { token } });
  csrfToken = session.csrfToken;
}

/** True when this browser is still signed in (a reload): fetches the session's CSRF token again. */
export async function restoreSession() {
  try {
    const session = await request('GET', '/admin/session');
    csrfToken = session.signedIn ? session.csrfToken : null;
    return session.signedIn;
  } catch {
    return false;
  }
}

export async function signOut() {
  try {
    await request('DELETE', '/admin/session');
  } finally {
    csrfToken = null;
  }
}

/** Who is signed in: `{ actor, role, operatorId }` (role `operator` or `admin`). */
export const whoAmI = () => get('/admin/me');

/** A query string from the defined entries of `params`. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}
