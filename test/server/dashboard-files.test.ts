import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, startTestServer, type TestServer } from '../helpers/server-harness.js';

/**
 * The dashboard's files are served beside the API, behind it: a request the API answers never looks
 * for a file, so a file that shares an API route's path is not what that route answers.
 */
describe('the dashboard files beside the API', () => {
  let t: TestServer;
  let dir = '';
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'stepwise-dashboard-'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>board</title>');
    writeFileSync(join(dir, 'app.js'), 'export const board = true;\n');
    // Files named as API routes are: the routes answer.
    writeFileSync(join(dir, 'pauses'), 'a file, not the inbox');
    writeFileSync(join(dir, 'conversations'), 'a file, not the list');
    t = await startTestServer({ debug: true, dashboardDir: dir });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('should serve the page and its scripts', async () => {
    const page = await get(t.base, '/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.body).toContain('<title>board</title>');
    const script = await get(t.base, '/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(script.body).toContain('board = true');
  });

  it('should answer an API path from the API, not from a file of that name', async () => {
    const pauses = await get(t.base, '/pauses');
    expect(pauses.status).toBe(200);
    expect(pauses.headers.get('content-type')).toMatch(/application\/json/);
    expect(pauses.body).toMatchObject({ pauses: [] });
    const conversations = await get(t.base, '/conversations');
    expect(conversations.status).toBe(200);
    expect(conversations.headers.get('content-type')).toMatch(/application\/json/);
  });

  it('should still answer 404 as JSON for a path that is neither', async () => {
    const missing = await get(t.base, '/no-such-file.js');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { code: 'not_found' } });
  });
});
