/**
 * PostgreSQL store adapter (node-postgres, pooled). DESIGN §10.1.
 *
 * One schema per unit (`mailroom_<unit>`), created and migrated when the store opens under a
 * transaction-level advisory lock, so any number of processes may start at once. A collection is
 * a table `(_id text COLLATE "C" PRIMARY KEY, doc jsonb NOT NULL)`, created on first use under
 * the same lock. postgres-sql.ts holds the document encoding and the filter compiler.
 *
 * Writes:
 * - $set/$unset/$inc of top-level fields are one statement: a CTE picks the first match
 *   `FOR UPDATE` (PostgreSQL re-checks the WHERE on the row's latest version once the lock is
 *   granted, so two racing compare-and-sets cannot both win) and the UPDATE rewrites its jsonb.
 * - Any other update ($push, $addToSet, $pull, dotted paths) reads the matching row with its
 *   version (xmin), applies query.ts's applier (the embedded store's semantics exactly) and
 *   writes it back only if the row is still that version, else reads again: just as atomic,
 *   and no lock or connection held between the two statements.
 * - An upsert that finds nothing inserts; when a racing upsert inserted first (unique
 *   violation), it runs again and updates that document.
 * - updateMany and deleteMany lock their rows in _id order; a statement or transaction that
 *   PostgreSQL still picks as a deadlock's victim (rolled back) runs once more.
 * - SQLSTATE 23505 (unique violation) is DuplicateKeyError.
 *
 * Indexes: btree expression indexes on the declared paths (`doc -> 'a' -> 'b'`), unique ones
 * NULLS NOT DISTINCT (a missing field collides with a missing one, as in the embedded store and
 * MongoDB) and partial where sparse; a small partial index per indexed path of the rows holding
 * an array there (postgres-sql.ts's index conditions need it); a wildcard `"<field>.$**"` adds a
 * GIN jsonb_path_ops index on the document, which answers the jsonpath equality tests. TTL
 * indexes are swept by a periodic DELETE (unref'd timer) as MongoDB's TTL monitor does.
 *
 * Connections: a pool of MAILROOM_POSTGRES_POOL (default 10) per process, a statement timeout
 * on every statement (default 30 s), idle connections' errors logged (never thrown at the
 * process), and a read retried once when its connection broke (writes are not: they may have
 * committed). The statements of a lookup or compare-and-set by _id and the inserts are named
 * prepared statements (PostgresStore.statement): parsed once per connection, not planned again.
 *
 * U+0000, which text and jsonb cannot hold, is stored escaped (postgres-sql.ts escapeNul).
 *
 * Layout (postgres/): store.ts (PostgresStore: pool, migrations, statements, TTL sweep),
 * collection.ts (PostgresCollection: a table, its indexes, the port's reads and writes), errors.ts.
 */
import { userInfo } from "node:os";
import pg from "pg";
import { parseJsonb } from "./postgres-sql.js";
import { MAX_IDENTIFIER, PostgresStore, type PostgresStoreOptions } from "./postgres/store.js";

export { PostgresStore, type PostgresStoreOptions } from "./postgres/store.js";
export { PostgresCollection } from "./postgres/collection.js";

const JSON_OID = 114;
const JSONB_OID = 3802;

/**
 * The URL pg is given. libpq connects as the operating system's user when the URL names none;
 * pg takes $USER instead, unset in some containers: name the OS user then, as libpq would.
 */
export function postgresConnectionString(url: string): string {
  if (process.env.PGUSER || process.env.USER) return url;
  try {
    const parsed = new URL(url);
    if (parsed.username || !parsed.hostname) return url;
    parsed.username = userInfo().username;
    return parsed.toString();
  } catch {
    return url;
  }
}

function typeParser(oid: number, format?: string): unknown {
  if (oid === JSONB_OID || oid === JSON_OID) return parseJsonb;
  return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format);
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = options.schema ?? `mailroom_${options.service}`;
  if (schema.length === 0 || Buffer.byteLength(schema) > MAX_IDENTIFIER) throw new Error(`invalid schema name "${schema}"`);
  const pool = new pg.Pool({
    connectionString: postgresConnectionString(options.url),
    max: options.poolSize ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    // A transaction left open (a process stalled mid read-modify-write) must not hold its row locks for ever.
    idle_in_transaction_session_timeout: Math.max(60_000, 2 * (options.statementTimeoutMs ?? 30_000)),
    application_name: `mailroom-${options.service}`.slice(0, 63),
    // Also the longest wait for a free pooled connection (pg-pool): no shorter than a statement may take.
    connectionTimeoutMillis: Math.max(10_000, options.statementTimeoutMs ?? 30_000),
    idleTimeoutMillis: 30_000,
    types: { getTypeParser: typeParser } as pg.CustomTypesConfig,
  });
  const store = new PostgresStore(pool, schema, options);
  // An idle connection the server ends (a restart, pg_terminate_backend) must not crash the process.
  pool.on("error", (err) => store.logger.warn(`store: an idle PostgreSQL connection failed (${err.message}); the pool opens another`));
  try {
    await store.migrate();
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err;
  }
  return store;
}

/** Whether the database has this schema (a unit's store that exists already). */
export async function postgresSchemaExists(url: string, schema: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: postgresConnectionString(url) });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    return (found.rowCount ?? 0) > 0;
  } finally {
    await client.end().catch(() => undefined);
  }
}
