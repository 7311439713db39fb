// The HTTP control plane (docs/protocol.md, HTTP routes), with the token from the session and errors turned into ApiError.

const TOKEN_KEY = 'stepwise.token';

/**
 * A route of the protocol (`/conversations`, `/ws`) as a URL relative to where this page is served: an
 * application may mount stepwise under a prefix (`/agent/`), and the page's own folder is the prefix.
 */
export function endpoint(path) {
  return new URL(path.replace(/^\/+/, ''), document.baseURI);
}

/** The bearer token kept for this browser tab only (sessionStorage, never localStorage). */
export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function setToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage can be disabled; the token then lives only until reload, which is still usable.
  }
}

/** A failed request, carrying the server's `{error: {code, message, details}}` when there was one. */
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** One line for a banner: the server's message, plus the offending fields when it listed them. */
  describe() {
    const detail = describeDetails(this.details);
    return `${this.message}${detail ? ` — ${detail}` : ''}`;
  }
}

function describeDetails(details) {
  if (details === undefined || details === null) return '';
  if (typeof details === 'string') return details;
  try {
    const text = JSON.stringify(details);
    return text.length > 400 ? `${text.slice(0, 400)}…` : text;
  } catch {
    return '';
  }
}

/** Sends one JSON request; resolves to the parsed reply or rejects with an ApiError. */
export async function request(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = getToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(endpoint(path), { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new ApiError(0, 'network_error', `server unreachable (${error?.message ?? error})`);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // A proxy's HTML error page, for instance; reported below with the status.
  }
  if (response.ok) return data ?? {};
  const err = data?.error;
  throw new ApiError(
    response.status,
    err?.code ?? `http_${response.status}`,
    err?.message ?? `${response.status} ${response.statusText || 'request failed'}`,
    err?.details,
  );
}

export const api = {
  listConversations: (limit) => request('GET', `/conversations?limit=${limit}`),
  getConversation: (convId) => request('GET', `/conversations/${encodeURIComponent(convId)}`),
  chat: (body) => request('POST', '/chat', body),
  cancel: (convId) => request('POST', '/chat/cancel', { conv_id: convId }),
  setStepMode: (convId, on) => request('POST', `/debug/step/${on ? 'enable' : 'disable'}`, { conv_id: convId }),
  setBreakpoints: (convId, tools) => request('POST', '/debug/step/enable', { conv_id: convId, tools }),
  profiles: () => request('GET', '/profiles'),
  tools: () => request('GET', '/tools'),
  inferenceRequest: (convId, messageId) => request('GET', `/conversations/${encodeURIComponent(convId)}/inferences/${encodeURIComponent(messageId)}`),
  // A decision needs no debug mode (POST /pauses/:pause_id); edited results are a debugging feature.
  decide: ({ pause_id, ...body }) =>
    body.results === undefined ? request('POST', `/pauses/${encodeURIComponent(pause_id)}`, body) : request('POST', '/debug/continue', { pause_id, ...body }),
  pauses: (limit) => request('GET', `/pauses?limit=${limit}`),
  decisions: (convId) => request('GET', `/conversations/${encodeURIComponent(convId)}/decisions`),
  grants: () => request('GET', '/grants'),
  revokeGrant: (grantId) => request('DELETE', `/grants/${encodeURIComponent(grantId)}`),
  fork: (convId, body) => request('POST', `/conversations/${encodeURIComponent(convId)}/fork`, body),
};
