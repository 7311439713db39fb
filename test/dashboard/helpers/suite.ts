import type { Browser, Page } from 'playwright-core';
import { errorsOf, launchBrowser } from './browser.js';
import { startServer, type RunningServer, type ServeConfig } from './server.js';

export interface DashboardSuite {
  readonly server: RunningServer;
  readonly browser: Browser;
  /** Checks the page for uncaught errors and closes it after the current test. */
  track(page: Page): Page;
}

/** One real server and one browser for a test file, started before its tests and stopped after them. */
export function useDashboardSuite(config: ServeConfig): DashboardSuite {
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  const pages: Page[] = [];

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer(config), launchBrowser()]);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });
  afterEach(async () => {
    for (const page of pages.splice(0)) {
      expect(errorsOf(page)).toEqual([]);
      await page.close();
    }
  });

  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the dashboard suite is used before beforeAll started it');
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get browser() {
      return started(browser);
    },
    track(page) {
      pages.push(page);
      return page;
    },
  };
}
