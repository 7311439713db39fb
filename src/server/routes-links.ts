import type { Request, Response, Router } from 'express';
import { statusOf } from './commands.js';
import type { ServerContext } from './context.js';
import { errorBody } from './errors.js';
import { loadExpress } from './server-deps.js';
import type { LinkClaims, LinkSigner } from './webhooks/signing.js';
import { linkPage, type PageContent } from './webhooks/link-page.js';

/** A refusal or an answer, said both ways: JSON for programs, a small page for a browser. */
interface Outcome {
  readonly status: number;
  readonly body: unknown;
  readonly page: PageContent;
}

const refusal = (status: number, code: string, message: string): Outcome => ({ status, body: errorBody(code, message), page: { title: 'Not done', text: message } });

/**
 * The signed links (docs/protocol.md, Webhooks and signed links): `GET /a/<token>` shows the pause and
 * a one-click form (a GET never decides, so a mail scanner that opens the link changes nothing);
 * `POST /a/<token>` decides, through the command port like `POST /debug/continue`, so it works on any
 * instance and the first decision wins. Every refusal is made before anything is sent: it changes nothing.
 */
export function linkRoutes(context: ServerContext, signer: LinkSigner | undefined): Router {
  const express = loadExpress();
  const router = express.Router();
  router.use('/a', express.urlencoded({ extended: false, limit: '16kb' }), (_req, res, next) => {
    // The token is in the URL: no cache, no referrer, no framing (a one-click page must not be clickjacked).
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
    next();
  });
  router.get('/a/:token', async (req, res) => {
    const claims = checked(signer, String(req.params['token']));
    if ('status' in claims) return answer(req, res, claims);
    const pending = (await context.directory.pauses(claims.conv_id)).find(({ pause }) => pause.pause_id === claims.pause_id);
    if (!pending) return answer(req, res, refusal(409, 'pause_resolved', `pause "${claims.pause_id}" is no longer waiting`));
    answer(req, res, { status: 200, body: { pause: pending.pause, action: claims.action }, page: { title: `${verb(claims)}?`, text: '', pause: pending.pause, form: claims } });
  });
  router.post('/a/:token', async (req, res) => {
    const claims = checked(signer, String(req.params['token']));
    if ('status' in claims) return answer(req, res, claims);
    const asked = (req.body ?? {}) as { pause_id?: unknown; action?: unknown };
    // The token is for one pause and one action: a request naming another is refused, not rewritten.
    if ((asked.pause_id !== undefined && asked.pause_id !== claims.pause_id) || (asked.action !== undefined && asked.action !== claims.action)) {
      return answer(req, res, refusal(403, 'link_mismatch', 'this link is for another pause or another action'));
    }
    const result = await context.commands.send({
      command: { type: 'decide', pause_id: claims.pause_id, conv_id: claims.conv_id, action: claims.action, ...(claims.action === 'deny' ? { reason: 'denied through a signed link' } : {}) },
      conv_id: claims.conv_id,
      by: 'link',
    });
    if (result.ok) {
      answer(req, res, { status: 200, body: { ok: true, ...result.value }, page: { title: `${verb(claims)}: done`, text: 'The run goes on.' } });
      return;
    }
    const { error } = result;
    if (error.retry_after_s !== undefined) res.setHeader('Retry-After', String(error.retry_after_s));
    answer(req, res, { status: statusOf(error), body: errorBody(error.code, error.message, error.details), page: { title: 'Not done', text: error.message } });
  });
  return router;
}

/**
 * The token's claims, or why it is refused: 403 `link_invalid` for any text but one this service
 * signed, spelled as it signed it (without a link secret nothing is); 403 once its pause's deadline passed.
 */
function checked(signer: LinkSigner | undefined, token: string): LinkClaims | Outcome {
  const claims = signer?.verify(token);
  if (!claims) return refusal(403, 'link_invalid', 'this link is not valid');
  if (Date.now() > claims.deadline_ms) return refusal(403, 'link_expired', "this link expired at its pause's deadline");
  return claims;
}

const verb = (claims: LinkClaims): string => (claims.action === 'continue' ? 'Continue' : 'Deny');

/** JSON unless the client prefers HTML (a browser). */
function answer(req: Request, res: Response, outcome: Outcome): void {
  res.status(outcome.status);
  if (req.accepts(['json', 'html']) === 'html') res.type('html').send(linkPage(outcome.page));
  else res.json(outcome.body);
}

