import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Router } from 'express';
import { loadExpress } from './server-deps.js';

const moduleDir = dirname(fileURLToPath(import.meta.url));

/**
 * The dashboard's static folder, `src/dashboard`: a sibling of this module's folder under vitest, or
 * seen from the compiled `dist/src/server` (the package ships `src/dashboard`; the build copies no static files).
 */
export function findDashboardDir(): string | undefined {
  const candidates = [resolve(moduleDir, '../dashboard'), resolve(moduleDir, '../../../src/dashboard')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates.find((dir) => existsSync(dir));
}

const PLACEHOLDER = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>stepwise</title></head>
<body><h1>stepwise</h1><p>The dashboard is not built yet. The API is up: try <code>GET /healthz</code>,
<code>POST /chat</code> and the WebSocket at <code>/ws?conv_id=…</code>.</p></body></html>
`;

/** `GET /` and the dashboard's static files; no auth (the page asks for a token itself). */
export function dashboardRoutes(dir = findDashboardDir()): Router {
  const express = loadExpress();
  const router = express.Router();
  if (dir) router.use(express.static(dir, { index: 'index.html', fallthrough: true }));
  // Reached only while the folder has no index.html.
  router.get('/', (_req, res) => {
    res.type('html').send(PLACEHOLDER);
  });
  return router;
}
