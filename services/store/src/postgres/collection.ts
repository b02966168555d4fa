/** A collection of the PostgreSQL store: a table (_id, doc jsonb), its indexes, reads and writes of the port. */
import pg from "pg";
import { DuplicateKeyError, idSegment, type BulkWriteOperation, type BulkWriteResult, type Collection, type Doc, type Filter, type FindOneAndUpdateOptions, type FindOptions, type IdSegment, type IndexSpec, type Update, type UpdateOptions, type UpdateResult } from "../port.js";
import { applyUpdate, assertDefinedFilter, deepEqual, newStoreId, upsertSeed, validateUpdate } from "../query.js";
import { Params, arrayAt, compileFilter, compileProjection, compileSort, compileUpdate, encodeDoc, encodeValue, escapeNul, fieldExpr, quoteIdent, splitPath, unescapeNul, type CompiledFilter, type ProjectionPlan } from "../postgres-sql.js";
import { isConnectionError, isDuplicateKey, sha1 } from "./errors.js";

type Row = { _id: string; doc: Record<string, unknown> };

/** Rows per INSERT of insertMany, and per transaction of an updateMany read-modify-write. */
const BATCH = 500;
/** Writes to a table before this process first analyzes it (countWritten). */
const ANALYZE_MIN_ROWS = 10_000;
/** Times an optimistic read-modify-write may find its row changed before it gives up (each loss is another writer's win). */
const MAX_WRITE_CONFLICTS = 1_000;
/** Rows deleted per statement by the TTL sweep (short locks on a large backlog). */
const SWEEP_BATCH = 5_000;
/**
 * A filter naming one document by its _id (a lookup, a compare-and-set): PostgreSQL plans its
 * statements the same whatever the values, through the primary key, so they are prepared.
 */
function byId(filter: Filter): boolean {
  return typeof (filter as { _id?: unknown })._id === "string";
}

/** The insert of one row, prepared. */
const insertRow = (table: string) => `INSERT INTO ${table} (_id, doc) VALUES ($1, $2::jsonb)`;

/** The first string after every string that starts with `prefix` (code point order), if there is one. */
function prefixEnd(prefix: string): string | undefined {
  const chars = [...prefix];
  const last = chars.pop()?.codePointAt(0);
  if (last === undefined) return undefined;
  const next = last + 1;
  if (next > 0x10ffff || (next >= 0xd800 && next <= 0xdfff)) return undefined;
  return chars.join("") + String.fromCodePoint(next);
}

/** What a collection uses of its store (PostgresStore, which opens the collections). */
export interface PostgresHost {
  /** The schema, quoted for SQL. */
  readonly schema: string;
  readonly bytewiseStrings: boolean;
  readonly incFunction: string;
  assertOpen(): void;
  statement(sql: string, values: unknown[], prepare: boolean): pg.QueryConfig;
  query(sql: string, values?: unknown[], prepare?: boolean): Promise<pg.QueryResult>;
  read(sql: string, values?: unknown[], prepare?: boolean): Promise<pg.QueryResult>;
  transaction<R>(fn: (client: pg.PoolClient) => Promise<R>): Promise<R>;
  ddl(fn: (client: pg.PoolClient) => Promise<void>): Promise<void>;
  watchExpiry(): void;
}

export class PostgresCollection<T extends Doc> implements Collection<T> {
  /** The table, schema-qualified and quoted. */
  readonly table: string;
  /** Paths keying btree indexes declared here: filters on them add conditions the indexes answer. */
  private readonly indexed = new Set<string>();
  private readonly ttl = new Map<string, number>();
  private created?: Promise<void>;

  /** Rows this process wrote since it last analyzed the table, and how many it had written by then. */
  private writtenSinceAnalyze = 0;
  private writtenAtAnalyze = 0;
  private analyzing = false;

  constructor(private readonly store: PostgresHost, readonly name: string, private readonly tableName: string) {
    this.table = `${store.schema}.${quoteIdent(tableName)}`;
  }

  // -- plumbing

  /**
   * Every write statement of the collection: run (on `tx`, the connection of a transaction under
   * way, else on any pooled one), then counted towards the table's next ANALYZE.
   */
  private async write(sql: string, values: unknown[] = [], prepare = false, tx?: pg.PoolClient): Promise<pg.QueryResult> {
    const result = tx ? await tx.query(this.store.statement(sql, values, prepare)) : await this.store.query(sql, values, prepare);
    this.countWritten(result.rowCount ?? 0);
    return result;
  }

  /**
   * Autovacuum analyzes a table once 50 rows + 10 % of it changed, but a server may run with it
   * off or not have got to a fresh import yet: planned without statistics, each keyset page of
   * 1,000,000 imported contacts read every row after its cursor (1.4 s a page; 1 ms analyzed).
   * So the table is analyzed here too, in the background, after ANALYZE_MIN_ROWS writes and
   * then each time this process's writes grew by a fifth.
   */
  private countWritten(rows: number): void {
    this.writtenSinceAnalyze += rows;
    if (this.analyzing || this.writtenSinceAnalyze < Math.max(ANALYZE_MIN_ROWS, this.writtenAtAnalyze / 5)) return;
    this.analyzing = true;
    const counted = this.writtenSinceAnalyze;
    this.writtenSinceAnalyze = 0;
    this.store.query(`ANALYZE ${this.table}`)
      .then(() => void (this.writtenAtAnalyze += counted))
      // Statistics only: a failure (the store closing, a timeout) leaves the next write to try again.
      .catch(() => void (this.writtenSinceAnalyze += counted))
      .finally(() => void (this.analyzing = false));
  }

  /** Runs an operation: the store open, the table there, unique violations as DuplicateKeyError. */
  private async run<R>(fn: () => Promise<R>): Promise<R> {
    this.store.assertOpen();
    try {
      await this.ensureTable();
      return await fn();
    } catch (err) {
      if (isDuplicateKey(err)) throw new DuplicateKeyError(`duplicate key in collection "${this.name}"`);
      throw err;
    }
  }

  private ensureTable(): Promise<void> {
    this.created ??= this.createTable().catch((err) => {
      this.created = undefined;
      throw err;
    });
    return this.created;
  }

  private async createTable(): Promise<void> {
    const { rows } = await this.store.read("SELECT to_regclass($1) IS NOT NULL AS present", [this.table]);
    if (rows[0].present) return;
    await this.store.ddl(async (client) => {
      await client.query(`CREATE TABLE IF NOT EXISTS ${this.table} (_id text COLLATE "C" PRIMARY KEY, doc jsonb NOT NULL)`);
    });
  }

  private compile(filter: Filter, params: Params): CompiledFilter {
    assertDefinedFilter(filter);
    return compileFilter(filter, params, { indexed: this.indexed, bytewiseStrings: this.store.bytewiseStrings });
  }

  private where(filter: Filter, params: Params): string {
    return this.compile(filter, params).where;
  }

  private toDoc(row: Row, projection?: ProjectionPlan): T {
    // Spread, not Object.assign: a stored "__proto__" key stays a plain property.
    const doc: Record<string, unknown> = { _id: unescapeNul(row._id), ...row.doc };
    if (projection?.apply) return projection.apply(doc) as T;
    if (projection?.dropId) delete doc._id;
    return doc as T;
  }

  /** The _id and doc column values of a document to insert (a missing _id is generated, as MongoDB's driver does). */
  private row(doc: T): [string, string] {
    if (doc._id === undefined) (doc as Doc)._id = newStoreId();
    if (typeof doc._id !== "string") throw new Error(`_id must be a string, not ${typeof doc._id}`);
    return [escapeNul(doc._id), encodeDoc(doc)];
  }

  private selectSql(filter: Filter, options: FindOptions, params: Params): { sql: string; projection: ProjectionPlan } {
    const projection = compileProjection(options.projection, params);
    const { where, split } = this.compile(filter, params);
    const order = compileSort(options.sort);
    const limit = options.limit ? Math.abs(options.limit) : undefined;
    const page = `${limit ? ` LIMIT ${params.add(limit)}` : ""}${options.skip ? ` OFFSET ${params.add(options.skip)}` : ""}`;
    if (split && order) {
      // Sorted with index conditions: the rows without arrays on the indexed paths apart, so a
      // btree index can deliver them in order up to the limit (postgres-sql.ts CompiledFilter).
      const cap = limit ? ` LIMIT ${params.add(limit + (options.skip ?? 0))}` : "";
      const side = (where: string) => `(SELECT _id, doc FROM ${this.table} WHERE ${where} ${order}${cap})`;
      const sql = `SELECT _id, ${projection.docExpr} AS doc FROM (${side(split.plain)} UNION ALL ${side(split.arrays)}) AS found ${order}${page}`;
      return { sql, projection };
    }
    return { sql: `SELECT _id, ${projection.docExpr} AS doc FROM ${this.table} WHERE ${where} ${order}${page}`, projection };
  }

  // -- reads

  findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    return this.find(filter, { ...options, limit: 1 }).then((docs) => docs[0] ?? null);
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return this.run(async () => {
      const params = new Params();
      const { sql, projection } = this.selectSql(filter, options, params);
      const { rows } = await this.store.read(sql, params.values, byId(filter));
      return rows.map((row) => this.toDoc(row as Row, projection));
    });
  }

  /** PostgreSQL's plan for a find (not part of the port: for tests and for looking into a slow query). */
  explain(filter: Filter, options: FindOptions = {}): Promise<string> {
    return this.run(async () => {
      const params = new Params();
      const { sql } = this.selectSql(filter, options, params);
      const { rows } = await this.store.read(`EXPLAIN ${sql}`, params.values);
      return rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    });
  }

  countDocuments(filter: Filter = {}): Promise<number> {
    return this.run(async () => {
      const params = new Params();
      const { rows } = await this.store.read(`SELECT count(*) AS n FROM ${this.table} WHERE ${this.where(filter, params)}`, params.values);
      return Number(rows[0].n);
    });
  }

  /** Keyset pages in _id order, within the prefix's _id range (the primary key index answers it). */
  async *findIdSegments(filter: Filter, segment: IdSegment, options: { batchSize?: number } = {}): AsyncIterable<string[]> {
    const batchSize = Math.max(1, options.batchSize ?? 5_000);
    let after: string | undefined;
    for (;;) {
      const ids: Record<string, string> = {};
      if (segment.prefix) ids.$gte = segment.prefix;
      const end = prefixEnd(segment.prefix);
      if (end !== undefined) ids.$lt = end;
      if (after !== undefined) ids.$gt = after;
      const page = await this.run(async () => {
        const params = new Params();
        const within = Object.keys(ids).length ? { $and: [filter, { _id: ids }] } : filter;
        const { sql } = this.selectSql(within, { sort: { _id: 1 }, limit: batchSize, projection: { _id: 1 } }, params);
        return (await this.store.read(sql, params.values)).rows.map((r) => unescapeNul(r._id as string));
      });
      const out: string[] = [];
      for (const id of page) {
        const part = idSegment(id, segment);
        if (part !== undefined) out.push(part);
      }
      if (out.length) yield out;
      if (page.length < batchSize) return;
      after = page[page.length - 1];
    }
  }

  // -- inserts

  insertOne(doc: T): Promise<void> {
    return this.run(async () => {
      await this.write(insertRow(this.table), this.row(doc), true);
    });
  }

  insertMany(docs: T[]): Promise<void> {
    return this.run(async () => {
      for (let i = 0; i < docs.length; i += BATCH) {
        const rows = docs.slice(i, i + BATCH).map((d) => this.row(d));
        try {
          await this.write(`INSERT INTO ${this.table} (_id, doc) SELECT * FROM unnest($1::text[], $2::jsonb[])`, [
            rows.map((r) => r[0]),
            rows.map((r) => r[1]),
          ], true);
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
          // Ordered, as MongoDB's insertMany: the documents before the duplicate stay inserted.
          for (const row of rows) await this.write(insertRow(this.table), row, true);
        }
      }
    });
  }

  // -- updates

  /**
   * Updates the first match (by `sort`): one statement for the updates compileUpdate takes,
   * else a locked read-modify-write. Null when nothing matches.
   */
  private async modifyOne(filter: Filter, update: Update, sort?: FindOneAndUpdateOptions["sort"], tx?: pg.PoolClient): Promise<{ before: T; after: T; modified: boolean } | null> {
    const params = new Params();
    const where = this.where(filter, params);
    const order = compileSort(sort);
    const expr = compileUpdate(update, "t.doc", params, this.store.incFunction);
    if (expr !== undefined) {
      const { rows } = await this.write(
        `WITH target AS (SELECT _id, doc FROM ${this.table} WHERE ${where} ${order} LIMIT 1 FOR UPDATE),
         changed AS (UPDATE ${this.table} AS t SET doc = ${expr} FROM target
                     WHERE t._id = target._id AND ${expr} IS DISTINCT FROM t.doc RETURNING t._id, t.doc)
         SELECT target._id, target.doc AS before, changed.doc AS after FROM target LEFT JOIN changed ON changed._id = target._id`,
        params.values,
        byId(filter),
        tx,
      );
      if (rows.length === 0) return null;
      const row = rows[0];
      const before = this.toDoc({ _id: row._id, doc: row.before });
      const modified = row.after !== null;
      return { before, after: modified ? this.toDoc({ _id: row._id, doc: row.after }) : this.toDoc({ _id: row._id, doc: row.before }), modified };
    }
    if (tx) {
      // Inside a transaction (bulkWrite): the row locked until it commits.
      const { rows } = await tx.query(`SELECT _id, doc FROM ${this.table} WHERE ${where} ${order} LIMIT 1 FOR UPDATE`, params.values);
      if (rows.length === 0) return null;
      const before = this.toDoc(rows[0] as Row);
      const after = applyUpdate(before, update, false);
      const modified = !deepEqual(before, after);
      if (modified) await this.write(`UPDATE ${this.table} SET doc = $2::jsonb WHERE _id = $1`, [escapeNul(before._id), encodeDoc(after)], true, tx);
      return { before, after, modified };
    }
    // Optimistic: the row's version (xmin, new with every update) read with it, and the write a
    // compare-and-set on that version; when another write came between, read again (the filter
    // is checked on the new version). Two statements, no transaction: a locked read, the update
    // and the COMMIT held the row lock and a pooled connection across four round trips, and a
    // hot document (daily counters, one per day) queued a process's every query behind them.
    for (let attempt = 1; ; attempt++) {
      const { rows } = await this.store.read(`SELECT _id, doc, xmin::text AS version FROM ${this.table} WHERE ${where} ${order} LIMIT 1`, params.values, byId(filter));
      if (rows.length === 0) return null;
      const before = this.toDoc(rows[0] as Row);
      const after = applyUpdate(before, update, false);
      if (deepEqual(before, after)) return { before, after, modified: false };
      const written = await this.write(
        `UPDATE ${this.table} SET doc = $2::jsonb WHERE _id = $1 AND xmin = $3::xid`,
        [escapeNul(before._id), encodeDoc(after), rows[0].version],
        true,
      );
      if (written.rowCount === 1) return { before, after, modified: true };
      if (attempt >= MAX_WRITE_CONFLICTS) throw new Error(`an update of collection "${this.name}" lost ${attempt} races in a row`);
    }
  }

  /**
   * modifyOne, else (with upsert) the insert; an insert beaten by a racing upsert updates its
   * document instead. In a transaction (`tx`) a unique violation aborts it: thrown as it is.
   */
  private async upsertOne(filter: Filter, update: Update, upsert: boolean | undefined, sort?: FindOneAndUpdateOptions["sort"], tx?: pg.PoolClient) {
    assertDefinedFilter(filter);
    validateUpdate(update);
    for (let attempt = 0; ; attempt++) {
      const found = await this.modifyOne(filter, update, sort, tx);
      if (found) return { ...found, upsertedId: undefined };
      if (!upsert) return null;
      const doc = applyUpdate(upsertSeed(filter), update, true) as T;
      try {
        await this.write(insertRow(this.table), this.row(doc), true, tx);
        return { before: null, after: doc, modified: false, upsertedId: doc._id };
      } catch (err) {
        if (!isDuplicateKey(err) || attempt >= 2 || tx) throw err;
      }
    }
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.run(async () => {
      const r = await this.upsertOne(filter, update, options.upsert);
      if (!r) return { matchedCount: 0, modifiedCount: 0 };
      if (r.upsertedId !== undefined) return { matchedCount: 0, modifiedCount: 0, upsertedId: r.upsertedId };
      return { matchedCount: 1, modifiedCount: r.modified ? 1 : 0 };
    });
  }

  findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    return this.run(async () => {
      const r = await this.upsertOne(filter, update, options.upsert, options.sort);
      if (!r) return null;
      return options.returnDocument === "before" ? r.before : r.after;
    });
  }

  updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.run(async () => {
      validateUpdate(update);
      const params = new Params();
      const where = this.where(filter, params);
      const expr = compileUpdate(update, "t.doc", params, this.store.incFunction);
      if (expr !== undefined) {
        const { rows } = await this.write(
          // Rows locked in _id order (as every multi-row write here): two of them cannot deadlock.
          `WITH matched AS (SELECT _id FROM ${this.table} WHERE ${where} ORDER BY _id FOR UPDATE),
           changed AS (UPDATE ${this.table} AS t SET doc = ${expr} FROM matched
                       WHERE t._id = matched._id AND ${expr} IS DISTINCT FROM t.doc RETURNING 1)
           SELECT (SELECT count(*) FROM matched) AS matched, (SELECT count(*) FROM changed) AS modified`,
          params.values,
        );
        return { matchedCount: Number(rows[0].matched), modifiedCount: Number(rows[0].modified) };
      }
      // Locked read-modify-write in _id order, a transaction per batch (MongoDB's updateMany is not atomic either).
      let matchedCount = 0;
      let modifiedCount = 0;
      let after = "";
      for (;;) {
        const batch = await this.store.transaction(async (client) => {
          const p = new Params();
          const sql = `SELECT _id, doc FROM ${this.table} WHERE ${this.where(filter, p)} AND _id > ${p.add(escapeNul(after))} ORDER BY _id LIMIT ${BATCH} FOR UPDATE`;
          const docs = (await client.query(sql, p.values)).rows.map((r) => this.toDoc(r as Row));
          const changed: [string, string][] = [];
          for (const doc of docs) {
            const next = applyUpdate(doc, update, false);
            if (!deepEqual(doc, next)) changed.push([escapeNul(doc._id), encodeDoc(next)]);
          }
          if (changed.length) {
            await client.query(
              `UPDATE ${this.table} AS t SET doc = v.doc FROM unnest($1::text[], $2::jsonb[]) AS v(_id, doc) WHERE t._id = v._id`,
              [changed.map((c) => c[0]), changed.map((c) => c[1])],
            );
          }
          return { count: docs.length, changed: changed.length, last: docs.at(-1)?._id };
        });
        matchedCount += batch.count;
        modifiedCount += batch.changed;
        if (batch.count < BATCH || batch.last === undefined) break;
        after = batch.last;
      }
      return { matchedCount, modifiedCount };
    });
  }

  /**
   * In order, as MongoDB's ordered bulkWrite: on an error the operations before it stay, the
   * rest do not run. Up to BATCH operations go in one transaction (a commit each, not one per
   * operation). When a transaction fails (a duplicate key, a deadlock, an update the applier
   * refuses) it was rolled back whole: its operations run again one by one, each committed on
   * its own, so the ones before the failing one stay and that one throws. Not on a broken
   * connection: whether its COMMIT landed is unknown, and an operation is not idempotent.
   */
  bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult> {
    return this.run(async () => {
      const result: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
      for (let start = 0; start < operations.length; start += BATCH) {
        const chunk = operations.slice(start, start + BATCH);
        let done: BulkWriteResult;
        if (chunk.length === 1) done = await this.applyOperations(chunk, start);
        else {
          try {
            done = await this.store.transaction((tx) => this.applyOperations(chunk, start, tx));
          } catch (err) {
            if (isConnectionError(err)) throw err;
            done = await this.applyOperations(chunk, start);
          }
        }
        result.insertedCount += done.insertedCount;
        result.matchedCount += done.matchedCount;
        result.modifiedCount += done.modifiedCount;
        result.upsertedCount += done.upsertedCount;
        Object.assign(result.upsertedIds, done.upsertedIds);
      }
      return result;
    });
  }

  /** bulkWrite's operations `offset`… in order, in the transaction `tx` or each committed on its own. */
  private async applyOperations(operations: BulkWriteOperation<T>[], offset: number, tx?: pg.PoolClient): Promise<BulkWriteResult> {
    const result: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i];
      if ("insertOne" in op) {
        // A run of inserts is insertMany's: one statement for the run rather than one per row.
        let end = i + 1;
        while (end < operations.length && "insertOne" in operations[end]) end++;
        const docs = operations.slice(i, end).map((o) => (o as { insertOne: { document: T } }).insertOne.document);
        if (tx) {
          const rows = docs.map((d) => this.row(d));
          await this.write(`INSERT INTO ${this.table} (_id, doc) SELECT * FROM unnest($1::text[], $2::jsonb[])`, [rows.map((r) => r[0]), rows.map((r) => r[1])], true, tx);
        } else {
          await this.insertMany(docs);
        }
        result.insertedCount += docs.length;
        i = end - 1;
      } else if ("updateOne" in op) {
        const { filter, update, upsert } = op.updateOne;
        const r = await this.upsertOne(filter, update, upsert, undefined, tx);
        if (r?.upsertedId !== undefined) {
          result.upsertedCount++;
          result.upsertedIds[offset + i] = r.upsertedId;
        } else if (r) {
          result.matchedCount++;
          if (r.modified) result.modifiedCount++;
        }
      } else {
        throw new Error(`unsupported bulkWrite operation ${Object.keys(op)[0]}`);
      }
    }
    return result;
  }

  // -- deletes

  deleteOne(filter: Filter): Promise<{ deletedCount: number }> {
    return this.run(async () => {
      const params = new Params();
      const sql = `DELETE FROM ${this.table} WHERE _id IN (SELECT _id FROM ${this.table} WHERE ${this.where(filter, params)} LIMIT 1 FOR UPDATE)`;
      return { deletedCount: (await this.write(sql, params.values, byId(filter))).rowCount ?? 0 };
    });
  }

  deleteMany(filter: Filter): Promise<{ deletedCount: number }> {
    return this.run(async () => {
      const params = new Params();
      const sql = `DELETE FROM ${this.table} WHERE _id IN (SELECT _id FROM ${this.table} WHERE ${this.where(filter, params)} ORDER BY _id FOR UPDATE)`;
      return { deletedCount: (await this.write(sql, params.values)).rowCount ?? 0 };
    });
  }

  /** The TTL sweep of this collection: documents whose date is more than the index's seconds past. */
  async deleteExpired(): Promise<void> {
    if (this.ttl.size === 0) return;
    await this.ensureTable();
    for (const [path, seconds] of this.ttl) {
      const cutoff = new Date(Date.now() - seconds * 1000);
      const e = fieldExpr(path);
      // The range on the jsonb expression walks the TTL field's btree index; the rest is exact.
      const sql = `DELETE FROM ${this.table} WHERE _id IN (SELECT _id FROM ${this.table}
        WHERE ${e} > '{}'::jsonb AND ${e} < $1::jsonb AND jsonb_typeof(${e} -> '$date') = 'string'
          AND (${e} ->> '$date') COLLATE "C" < $2 LIMIT ${SWEEP_BATCH})`;
      while (((await this.write(sql, [encodeValue(cutoff), cutoff.toISOString()])).rowCount ?? 0) >= SWEEP_BATCH);
    }
  }

  // -- indexes

  createIndex(spec: IndexSpec): Promise<void> {
    const fields = Object.keys(spec.keys ?? {});
    if (fields.length === 0) return Promise.reject(new Error("createIndex needs at least one key"));
    for (const f of fields) {
      if (spec.keys[f] !== 1 && spec.keys[f] !== -1) return Promise.reject(new Error(`index key "${f}" must be 1 or -1`));
    }
    const wildcard = fields.findIndex((f) => f === "$**" || f.endsWith(".$**"));
    if (wildcard !== -1 && (wildcard !== fields.length - 1 || spec.unique || spec.expireAfterSeconds !== undefined)) {
      return Promise.reject(new Error("a wildcard index takes its wildcard last and cannot be unique or TTL"));
    }
    if (spec.expireAfterSeconds !== undefined && fields.length !== 1) {
      return Promise.reject(new Error("a TTL index (expireAfterSeconds) takes exactly one field"));
    }
    const plain = wildcard === -1 ? fields : fields.slice(0, -1);
    plain.forEach(splitPath);
    return this.run(async () => {
      const statements: string[] = [];
      // Index names are per schema: the table's own name is in the hash (it may be cut short before it).
      const name = (kind: string, def: unknown) =>
        quoteIdent(`${this.tableName.slice(0, 40)}_${kind}_${sha1(JSON.stringify([this.tableName, def])).slice(0, 12)}`);
      // The primary key is the index on _id alone.
      if (plain.length && !(plain.length === 1 && plain[0] === "_id")) {
        const columns = plain.map((f) => `${fieldExpr(f)} ${spec.keys[f] === 1 ? "ASC NULLS FIRST" : "DESC NULLS LAST"}`);
        const unique = spec.unique === true;
        const sparse = unique && spec.sparse === true;
        const def = { keys: plain.map((f) => [f, spec.keys[f]]), unique, sparse };
        statements.push(
          `CREATE ${unique ? "UNIQUE " : ""}INDEX IF NOT EXISTS ${name("i", def)} ON ${this.table} (${columns.join(", ")})` +
          (unique ? " NULLS NOT DISTINCT" : "") +
          (sparse ? ` WHERE ${plain.map((f) => `${fieldExpr(f)} IS NOT NULL`).join(" OR ")}` : ""),
        );
        // The rows holding an array on an indexed path, for the filters' index conditions (postgres-sql.ts hintSql).
        const prefixes = new Set<string>();
        for (const f of plain) {
          if (f === "_id") continue;
          const segments = splitPath(f);
          for (let i = 1; i <= segments.length; i++) prefixes.add(segments.slice(0, i).join("."));
        }
        for (const prefix of prefixes) {
          statements.push(`CREATE INDEX IF NOT EXISTS ${name("a", prefix)} ON ${this.table} (_id) WHERE ${arrayAt(prefix)}`);
        }
      }
      if (wildcard !== -1) statements.push(`CREATE INDEX IF NOT EXISTS ${name("gin", "doc")} ON ${this.table} USING gin (doc jsonb_path_ops)`);
      await this.store.ddl(async (client) => {
        for (const sql of statements) await client.query(sql);
      });
      // Only paths without a numeric segment get index conditions (postgres-sql.ts).
      for (const f of plain) if (f !== "_id" && !splitPath(f).some((s) => /^\d+$/.test(s))) this.indexed.add(f);
      if (spec.expireAfterSeconds !== undefined) {
        this.ttl.set(fields[0], spec.expireAfterSeconds);
        this.store.watchExpiry();
      }
    });
  }
}
