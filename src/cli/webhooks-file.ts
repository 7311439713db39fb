import { readFile } from 'node:fs/promises';
import { parseWebhooksConfig, type WebhooksConfig } from '../server/webhooks/webhooks-config.js';

/**
 * `--webhooks FILE` (docs/protocol.md, Webhooks and signed links): `{webhooks: [{url, secret, events?}],
 * link_secret?}`, `link_secret` required when a webhook gets pause events. A refusal names the file and
 * the offending fields, never a secret's value.
 */
export async function readWebhooksFile(path: string): Promise<WebhooksConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`--webhooks ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a secret.
    throw new Error(`--webhooks ${path}: not valid JSON`);
  }
  try {
    return parseWebhooksConfig(value);
  } catch (error) {
    throw new Error(`--webhooks ${path}: ${(error as Error).message.replace(/^webhooks: /, '')}`);
  }
}
