import { StoreUnavailableError } from '../core/store-errors.js';

/** A Redis command of a request's path: failing, it is the store being unreachable (503 `store_unavailable`). */
export async function reaching<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (error) {
    throw new StoreUnavailableError('redis', 'the service', (error as Error).message);
  }
}
