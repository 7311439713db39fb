/** The flag that makes a paused run leave memory early, for the CLI tests of hibernation. */
export const HIBERNATE: readonly string[] = Object.freeze(['--hibernate-after-ms', '100']);

/** Long enough past `--hibernate-after-ms 100` for a paused run to have left memory. */
const HIBERNATED_MS = 700;

export const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Waits until a run paused just now has hibernated. */
export const untilHibernated = (): Promise<void> => sleep(HIBERNATED_MS);
