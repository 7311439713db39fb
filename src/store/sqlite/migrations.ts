import type { Database } from 'better-sqlite3';

/** Marks a database file as a stepwise store (`PRAGMA application_id`, "STPW"). */
export const STEPWISE_APPLICATION_ID = 0x53545057;

/** One schema change. Versions count up from 1 without gaps; a released one is never edited, only followed. */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly up: (db: Database) => void;
}

/**
 * The schema. JSON columns hold the port's plain records as they are; the columns beside them are the
 * ones queries select or order by.
 */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    description: 'conversations, turns, the frame log, pauses, decisions, checkpoints, engine state',
    up: (db: Database) => {
      db.pragma(`application_id = ${STEPWISE_APPLICATION_ID}`);
      db.exec(`
        CREATE TABLE conversations (
          conv_id TEXT PRIMARY KEY,
          owner TEXT,
          created_at INTEGER NOT NULL,
          record TEXT NOT NULL
        );
        CREATE INDEX conversations_by_age ON conversations (created_at);
        CREATE TABLE turns (
          conv_id TEXT NOT NULL,
          turn_id TEXT NOT NULL,
          ord INTEGER NOT NULL,
          blocks TEXT NOT NULL,
          PRIMARY KEY (conv_id, turn_id)
        ) WITHOUT ROWID;
        CREATE INDEX turns_in_order ON turns (conv_id, ord);
        -- The frame log in chunks: the frames one batch committed for one conversation, as a JSON
        -- array of events with seq first_seq, first_seq + 1, … last_seq. A row per frame cost
        -- about twice as much per frame written (bench store_append).
        CREATE TABLE frames (
          id INTEGER PRIMARY KEY,
          conv_id TEXT NOT NULL,
          first_seq INTEGER NOT NULL,
          last_seq INTEGER NOT NULL,
          events TEXT NOT NULL
        );
        CREATE INDEX frames_by_conversation ON frames (conv_id, last_seq);
        CREATE TABLE pauses (
          pause_id TEXT PRIMARY KEY,
          conv_id TEXT NOT NULL,
          pause TEXT NOT NULL
        );
        CREATE INDEX pauses_by_conversation ON pauses (conv_id);
        CREATE TABLE decisions (
          id INTEGER PRIMARY KEY,
          conv_id TEXT NOT NULL,
          decision TEXT NOT NULL
        );
        CREATE INDEX decisions_by_conversation ON decisions (conv_id, id);
        CREATE TABLE checkpoints (
          conv_id TEXT NOT NULL,
          inference_id TEXT NOT NULL,
          checkpoint TEXT NOT NULL,
          PRIMARY KEY (conv_id, inference_id)
        );
        CREATE TABLE engine_state (
          conv_id TEXT PRIMARY KEY,
          state TEXT NOT NULL
        );
      `);
    },
  },
  {
    version: 2,
    description: 'frame chunks store the ids all their events share once (frames.shared)',
    up: (db: Database) => {
      // A JSON object of the fields every event of the chunk has with the same value (conv_id,
      // session_id, inference_id, turn_id), left out of each event in `events` (frame-chunks.ts).
      // NULL in the chunks written before: their events hold all their fields.
      db.exec(`ALTER TABLE frames ADD COLUMN shared TEXT`);
    },
  },
  {
    version: 3,
    description: 'turns in a rowid table, ordered by their rowid',
    up: (db: Database) => {
      // A WITHOUT ROWID table keeps only a quarter of a row in its page and the rest in an overflow
      // page of its own: each turn written cost a page more than its bytes. A rowid table keeps a
      // row up to a whole page in the page, so a batch writes fewer pages to the WAL.
      // `ord` becomes the rowid: a turn first written later gets a greater one than every row there.
      db.exec(`
        CREATE TABLE turns_by_rowid (
          ord INTEGER PRIMARY KEY,
          conv_id TEXT NOT NULL,
          turn_id TEXT NOT NULL,
          blocks TEXT NOT NULL
        );
        INSERT INTO turns_by_rowid (conv_id, turn_id, blocks) SELECT conv_id, turn_id, blocks FROM turns ORDER BY conv_id, ord;
        DROP TABLE turns;
        ALTER TABLE turns_by_rowid RENAME TO turns;
        CREATE UNIQUE INDEX turns_by_id ON turns (conv_id, turn_id);
      `);
    },
  },
  {
    version: 4,
    description: "a checkpoint's blocks in a column of their own (checkpoints.blocks)",
    up: (db: Database) => {
      // Beside the rest of the checkpoint instead of spliced into its JSON text by hand. NULL when they
      // are its turn's blocks as that turn's row holds them (written in the same batch), and in the
      // checkpoints written before, whose `checkpoint` JSON holds its blocks.
      db.exec(`ALTER TABLE checkpoints ADD COLUMN blocks TEXT`);
    },
  },
  {
    version: 5,
    description: "a turn's blocks in segments (turn_blocks), each write storing only what changed",
    up: (db: Database) => {
      // turn-segments.ts: `turns.blocks` keeps a turn's last whole write; what was written of it since,
      // from the first block that changed, goes here. A turn written before has no segments.
      db.exec(`
        CREATE TABLE turn_blocks (
          conv_id TEXT NOT NULL,
          turn_id TEXT NOT NULL,
          start INTEGER NOT NULL,
          blocks TEXT NOT NULL,
          PRIMARY KEY (conv_id, turn_id, start)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 6,
    description: 'frame chunks of wire frames (frames.texts): each frame the JSON it was sent with, one a line',
    up: (db: Database) => {
      // frame-chunks.ts: a chunk of frames appended with their text keeps those bytes in `texts`
      // (its `events` is then empty); one appended as events is as before.
      db.exec(`ALTER TABLE frames ADD COLUMN texts TEXT`);
    },
  },
  {
    version: 7,
    description: 'grants: remembered approvals (docs/protocol.md, Grants)',
    up: (db: Database) => {
      db.exec(`
        CREATE TABLE grants (
          grant_id TEXT PRIMARY KEY,
          created_at INTEGER NOT NULL,
          grant_record TEXT NOT NULL
        );
      `);
    },
  },
]);

/** The schema version this code writes. */
export const LATEST_VERSION = MIGRATIONS.length;

/**
 * Brings the database up to the last migration, each in its own transaction together with its
 * `user_version`, so a crash mid-way leaves the previous version intact. Returns the versions applied.
 */
export function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): number[] {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(`migrations must be numbered 1, 2, …: found version ${migration.version} at position ${index + 1}`);
    }
  });
  const current = db.pragma('user_version', { simple: true }) as number;
  const applied: number[] = [];
  for (const migration of migrations.slice(current)) {
    db.transaction(() => {
      migration.up(db);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
    applied.push(migration.version);
  }
  return applied;
}
