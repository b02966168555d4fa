/**
 * A PostgreSQL database of its own for a test file: created through a connection to the server's
 * `test` database (every machine here, CI's included, runs PostgreSQL 15 at 127.0.0.1:5432 with
 * trust authentication; MAILROOM_TEST_POSTGRES_URL names another) and dropped at the end.
 * An unreachable server skips the PostgreSQL tests on a laptop, and fails them under CI.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { postgresConnectionString } from "./postgres.js";

export const TEST_POSTGRES_URL = process.env.MAILROOM_TEST_POSTGRES_URL ?? "postgres://127.0.0.1:5432/test";

export type TestDatabase = { url: string; name: string; drop(): Promise<void> } | { skipReason: string };

/** A client on the server's `test` database (or MAILROOM_TEST_POSTGRES_URL's), for set-up and for looking behind the store. */
export async function adminClient(url = TEST_POSTGRES_URL): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresConnectionString(url), connectionTimeoutMillis: 5_000 });
  await client.connect();
  return client;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  let admin: pg.Client;
  try {
    admin = await adminClient();
  } catch (err) {
    const reason = (err as Error).message || (err as { code?: string }).code || String(err);
    if (process.env.CI) throw new Error(`PostgreSQL at ${TEST_POSTGRES_URL} is unreachable, and CI runs the store contract on it: ${reason}`);
    return { skipReason: `PostgreSQL at ${TEST_POSTGRES_URL} is unreachable: ${reason}` };
  }
  // A name of our own making ([a-z0-9_]): DDL takes no parameters.
  const name = `mailroom_test_${randomBytes(6).toString("hex")}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const client = await adminClient();
      try {
        // WITH (FORCE): a pool a failed test left open must not keep the database.
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
