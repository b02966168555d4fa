import { adminClient, createTestDatabase as createStoreTestDatabase } from "@mailroom/store/postgres.fixture.js";
import { TEST_STORE_VARIABLE } from "./suites.js";

/**
 * PostgreSQL for end-to-end suites: every machine here (CI's included) runs PostgreSQL 15 at
 * 127.0.0.1:5432 with trust authentication and a database `test` (MAILROOM_TEST_POSTGRES_URL
 * names another). A system on PostgreSQL gets a database of its own, made as the store contract's
 * are (services/store/src/postgres.fixture.ts) and dropped when the system stops (or at the run's
 * end, through the run registry, when a worker ends first).
 */
export function systemStore(): "embedded" | "postgres" {
  return process.env[TEST_STORE_VARIABLE] === "postgres" ? "postgres" : "embedded";
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** The `postgres` project exists to run on PostgreSQL: a server it cannot reach fails it, never skips it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const database = await createStoreTestDatabase();
  if ("skipReason" in database) throw new Error(`the system cannot run on PostgreSQL: ${database.skipReason}`);
  return database;
}

/** A database name of the fixture's making ([a-z0-9_]): safe in DDL, which takes no parameters. */
const DATABASE_NAME = /^mailroom_test_[a-z0-9_]+$/;

export async function dropTestDatabase(name: string): Promise<void> {
  if (!DATABASE_NAME.test(name)) throw new Error(`not a test database name: ${name}`);
  const client = await adminClient();
  try {
    // WITH (FORCE) ends the connections a killed unit's pool may have left (PostgreSQL 13+).
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
