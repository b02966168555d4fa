/**
 * The PostgreSQL store: its pool, schema migrations under the advisory lock, statements (prepared,
 * retried, in transactions) and the collections it holds. See ../postgres.ts for the whole design.
 */
import pg from "pg";
import type { Collection, Doc, Store } from "../port.js";
import { quoteIdent } from "../postgres-sql.js";
import { PostgresCollection } from "./collection.js";
import { isConnectionError, isDeadlock, sha1 } from "./errors.js";

export interface PostgresStoreOptions {
  /** A libpq URL: postgres://user:password@host:5432/database. */
  url: string;
  /** The unit, e.g. "email": its schema is `mailroom_<service>`. */
  service: string;
  /** Overrides the schema name (tests). */
  schema?: string;
  /** Connections per process (MAILROOM_POSTGRES_POOL). Default 10. */
  poolSize?: number;
  /** Every statement's time limit. Default 30 s. */
  statementTimeoutMs?: number;
  /** How often expired (TTL) documents are deleted. Default 60 s. */
  ttlIntervalMs?: number;
  /** Where a failed idle connection or TTL sweep is reported. Default console. */
  logger?: { warn(message: string): void };
}

const COLLECTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
/** PostgreSQL truncates identifiers beyond 63 bytes. */
export const MAX_IDENTIFIER = 63;
/**
 * Statement texts a process prepares (each on every pooled connection that runs it): the hot
 * fixed shapes, which code writes, number a few dozen; past this, a text is run unprepared, so
 * a shape made from data can never grow the server's per-connection cache without bound.
 */
const PREPARED_MAX = 500;

/** Schema migrations, applied once each, in order, under the schema's advisory lock. */
const MIGRATIONS: { version: number; statements: (schema: string) => string[] }[] = [
  {
    version: 1,
    statements: (schema) => [
      // $inc in SQL: IEEE doubles as JavaScript adds them, and a non-number refused as the applier does.
      `CREATE OR REPLACE FUNCTION ${schema}.inc(current jsonb, amount float8) RETURNS jsonb
       LANGUAGE plpgsql IMMUTABLE AS $fn$
       BEGIN
         IF current IS NULL THEN RETURN to_jsonb(amount); END IF;
         IF jsonb_typeof(current) <> 'number' THEN
           RAISE EXCEPTION 'Cannot apply $inc to a value of non-numeric type' USING ERRCODE = '22023';
         END IF;
         RETURN to_jsonb(current::float8 + amount);
       END $fn$`,
    ],
  },
];

export class PostgresStore implements Store {
  readonly kind = "postgres";
  /** The schema, quoted for SQL. */
  readonly schema: string;
  /** The database orders strings by code point (C collation): string ranges may use btree indexes. */
  bytewiseStrings = false;
  private closed = false;
  private readonly collections = new Map<string, PostgresCollection<Doc>>();
  private sweeper?: NodeJS.Timeout;
  private sweeping = false;
  private readonly lockKey: string;
  /** Names of the prepared statements, by text (see named()). */
  private readonly prepared = new Map<string, string>();

  constructor(
    readonly pool: pg.Pool,
    readonly schemaName: string,
    private readonly options: Pick<PostgresStoreOptions, "ttlIntervalMs" | "logger">,
  ) {
    this.schema = quoteIdent(schemaName);
    // One advisory lock per schema (a 64-bit key from its name) serialises its DDL across processes.
    this.lockKey = BigInt.asIntN(64, BigInt(`0x${sha1(`mailroom:${schemaName}`).slice(0, 16)}`)).toString();
  }

  get logger(): { warn(message: string): void } {
    return this.options.logger ?? console;
  }

  assertOpen(): void {
    if (this.closed) throw new Error("store is closed");
  }

  /**
   * The statement as pg runs it: with `prepare`, a named prepared statement, which pg parses
   * once per connection and then only binds and executes. Planning is most of a point lookup's
   * time on the server (a lookup by _id or an insert plans in about what it takes to run), and
   * after five executions PostgreSQL may keep a generic plan, which for a primary-key lookup is
   * the plan. Only for statements whose plan does not depend on the values (a lookup or
   * compare-and-set by _id, an insert): a generic plan of a range or a jsonpath search could
   * be much worse than a custom one.
   */
  statement(sql: string, values: unknown[], prepare: boolean): pg.QueryConfig {
    const name = prepare ? this.named(sql) : undefined;
    return name ? { name, text: sql, values } : { text: sql, values };
  }

  private named(sql: string): string | undefined {
    let name = this.prepared.get(sql);
    if (name === undefined && this.prepared.size < PREPARED_MAX) {
      // Unique per text: pg refuses one name for two texts on a connection.
      name = `mailroom_${sha1(sql).slice(0, 24)}`;
      this.prepared.set(sql, name);
    }
    return name;
  }

  /**
   * A statement on any pooled connection. Not repeated when the connection breaks (a write may
   * have committed), only when PostgreSQL chose it as a deadlock's victim (it was rolled back).
   */
  async query(sql: string, values: unknown[] = [], prepare = false): Promise<pg.QueryResult> {
    const statement = this.statement(sql, values, prepare);
    try {
      return await this.pool.query(statement);
    } catch (err) {
      if (!isDeadlock(err)) throw err;
      return this.pool.query(statement);
    }
  }

  /** A read: run once more on another connection when the first one broke. */
  async read(sql: string, values: unknown[] = [], prepare = false): Promise<pg.QueryResult> {
    const statement = this.statement(sql, values, prepare);
    try {
      return await this.pool.query(statement);
    } catch (err) {
      if (this.closed || !isConnectionError(err)) throw err;
      // When the server ended several backends at once (a restart, pg_terminate_backend), their
      // idle connections' notices are read a moment later: let the pool drop those first.
      await new Promise((resolve) => setTimeout(resolve, 25));
      return this.pool.query(statement);
    }
  }

  /** fn in a transaction; run again (once) when PostgreSQL rolled it back as a deadlock's victim. */
  async transaction<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    try {
      return await this.transactionOnce(fn);
    } catch (err) {
      if (!isDeadlock(err)) throw err;
      return this.transactionOnce(fn);
    }
  }

  private async transactionOnce<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      if (isConnectionError(err)) broken = err as Error;
      else await client.query("ROLLBACK").catch((e: Error) => (broken = e));
      throw err;
    } finally {
      // A broken connection leaves the pool instead of going back to it.
      client.release(broken);
    }
  }

  /** DDL under the schema's advisory lock (released at COMMIT): concurrent starts take turns. */
  ddl(fn: (client: pg.PoolClient) => Promise<void>): Promise<void> {
    return this.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock($1::bigint)", [this.lockKey]);
      await fn(client);
    });
  }

  async migrate(): Promise<void> {
    const migrations = `${this.schema}."$migrations"`;
    await this.ddl(async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query(`CREATE TABLE IF NOT EXISTS ${migrations} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const applied = new Set((await client.query(`SELECT version FROM ${migrations}`)).rows.map((r) => r.version as number));
      for (const migration of MIGRATIONS) {
        if (applied.has(migration.version)) continue;
        for (const sql of migration.statements(this.schema)) await client.query(sql);
        await client.query(`INSERT INTO ${migrations} (version) VALUES ($1)`, [migration.version]);
      }
    });
    // jsonb orders strings by the database's collation: only C (or POSIX) is code point order.
    const { rows } = await this.read("SELECT to_jsonb(d) AS d FROM pg_database d WHERE datname = current_database()");
    const db = (rows[0]?.d ?? {}) as { datcollate?: string; datlocprovider?: string };
    this.bytewiseStrings = (db.datlocprovider ?? "c") === "c" && /^(C|POSIX)([._@]|$)/i.test(db.datcollate ?? "");
  }

  /** The schema's $inc function, for compileUpdate. */
  get incFunction(): string {
    return `${this.schema}.inc`;
  }

  collection<T extends Doc>(name: string): Collection<T> {
    this.assertOpen();
    if (!COLLECTION_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    let collection = this.collections.get(name);
    if (!collection) {
      const table = name.length <= MAX_IDENTIFIER ? name : `${name.slice(0, 50)}_${sha1(name).slice(0, 12)}`;
      collection = new PostgresCollection<Doc>(this, name, table);
      this.collections.set(name, collection);
    }
    return collection as unknown as PostgresCollection<T>;
  }

  /** Starts the TTL sweep (once a collection declares a TTL index). */
  watchExpiry(): void {
    if (this.sweeper || this.closed) return;
    this.sweeper = setInterval(() => void this.sweepExpired(), this.options.ttlIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  /** Deletes expired documents in every collection with a TTL index (also called by tests). */
  async sweepExpired(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      for (const collection of this.collections.values()) await collection.deleteExpired();
    } catch (err) {
      if (!this.closed) this.logger.warn(`store: deleting expired documents failed: ${(err as Error).message}`);
    } finally {
      this.sweeping = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    await this.pool.end();
  }
}
