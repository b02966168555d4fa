/**
 * Embedded store adapter on LMDB (the `lmdb` package: memory-mapped B+trees, ACID, crash-safe).
 *
 * One LMDB environment per service directory (<dir>/store.mdb). Each collection has two named
 * databases: `d:<name>` (documents by _id, msgpack with shared structures, LZ4-compressed, the
 * _id only in the key) and `i:<name>` (secondary index entries; key = [indexNo, ...encoded field
 * values, _id]; an index ending in _id holds it once). Index definitions live in the `meta`
 * database. Stores written by the first layout (documents holding their _id, uncompressed;
 * indexes repeating a trailing _id) are read as they are: see getDoc and IndexDef.idTail. Memory does not grow with the data: documents stay on disk
 * (in the page cache), reads walk the B+trees synchronously.
 *
 * Writes: every write operation runs as one lmdb-js asynchronous transaction callback. The
 * callback executes inside the single LMDB write transaction (reads in it see the latest data,
 * so read-modify-write sequences such as findOneAndUpdate and unique checks are atomic, also
 * against other processes using the same directory). lmdb-js batches all callbacks queued in
 * the same event turn into one commit (group commit), and a write's promise resolves only once
 * its transaction is committed, so every acknowledged write survives a process crash. Commits
 * are plain LMDB commits (`overlappingSync: false`): with lmdb-js's default overlapping sync, a
 * commit was visible and acknowledged before the meta pointers that recovery reads were all
 * written, and the crash test (a writer SIGKILLed mid-stream) lost its last acknowledged batch
 * about once in ten CI runs. Group commit keeps the cost out of sight: 10,900 acknowledged
 * writes/s from 8 concurrent writers against 10,100 with overlapping sync, here.
 *
 * Opening a directory another process is writing: the LMDB inside lmdb (3.5.6, mdb_env_open2)
 * records in the shared lock file, as the base of the next write transaction, the last commit it
 * read while opening, without taking the write lock (upstream LMDB fixed this as ITS#9496). When
 * the other process commits in between, its next transaction builds on the commit before and
 * overwrites the one it had acknowledged: the SIGKILL crash test lost 8 acknowledged writes (one
 * commit) this way when its reader opened the directory mid-stream, and a process opening the
 * directory 300 times beside a writer lost 2 or 3 commits. So no store transaction commits on
 * such a stale base (startedStale: its id is not above the last commit's): it writes nothing and
 * its writes run again once the base is fresh; and a process opening the directory checks right
 * away and opens it again while it left the base stale (openEnv). Writes wait for that, a few ms
 * (reads meanwhile see the commit before). Opened by other means (another LMDB tool, or a process
 * killed right after opening), the base stays stale until some process opens the directory
 * again: writes wait, then answer 503, but none overwrites an acknowledged one.
 *
 * Queries: matching and updates use query.ts (MongoDB semantics). A small planner picks the
 * _id (primary) tree or a secondary index from equality / $in / range conditions; candidates
 * are always re-checked with matchesFilter, so an index only has to deliver a superset. When
 * the chosen scan already yields the requested sort order, skip/limit stop the scan early;
 * otherwise only the matching documents are collected and sorted. A wildcard index
 * ({ workspaceId: 1, "properties.$**": 1 }) holds an entry per path and value under the
 * sub-document and answers equality, $in and ranges on any of its paths (IndexDef.wildcard).
 */
import { readdir, rename, stat } from "node:fs/promises";
import { createReadStream } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ABORT, compareKeys, open, type Database, type RootDatabase } from "lmdb";
import { readKey as readOrderedKey, writeKey as writeOrderedKey } from "ordered-binary";
import { unavailable } from "@mailroom/kit/errors.js";
import {
  DuplicateKeyError,
  type BulkWriteOperation,
  type BulkWriteResult,
  type Collection,
  type Doc,
  type Filter,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type IdSegment,
  idSegment,
  pagedIdSegments,
  type IndexSpec,
  type Sort,
  type Store,
  type Update,
  type UpdateOptions,
  type UpdateResult,
} from "./port.js";
import {
  applyUpdate,
  assertDefinedFilter,
  cloneValue,
  deepEqual,
  getPath,
  isPlainObject,
  compileFilter,
  newStoreId,
  setPath,
  unsetPath,
  upsertSeed,
  validateUpdate,
  valuesAt,
} from "./query.js";

export interface StoreLogger {
  info(message: string): void;
}

export interface MigrationInfo {
  collection: string;
  documents: number;
  indexes: number;
  from: string;
  movedTo: string;
  ms: number;
}

export interface LmdbStoreOptions {
  /** Directory of the service's store; the environment is <dir>/store.mdb. */
  dir: string;
  /** Where the one-line migration notice goes (default: console). */
  logger?: StoreLogger;
  /** Called once per collection migrated from the old nedb datafiles. */
  onMigrate?: (info: MigrationInfo) => void;
  /** How often expired (TTL) documents are deleted. Default 60 s. */
  ttlSweepIntervalMs?: number;
  /** Address space reserved for the memory map (not disk, not memory). Default 64 GiB; grows if needed. */
  mapSizeBytes?: number;
}

const DEFAULT_MAP_SIZE = 64 * 1024 ** 3;

export const LMDB_FILE = "store.mdb";
const COLLECTION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;
/** Longest string (in chars) kept in an index key; longer ones are cut (the index stays a superset). */
const KEY_STRING_MAX = 200;
/** Greater than every _id we store: closes a range "after every entry with this prefix". */
const HIGH = "\uffff\uffff";
const EMPTY = Buffer.alloc(0);
const NO_DICTIONARY = Buffer.alloc(0);

// ---------------------------------------------------------------------------------------------
// Index keys (ordered-binary arrays): [index, ...parts of each field value, _id]. A value's part
// starts with a one-character type tag following MongoDB's sort order of types (missing/null <
// numbers < strings < objects < arrays < binary < booleans < dates); strings are stored as tag +
// text in one element, numbers and dates as [tag, number]. Compact keys keep the index small.

const T_NULL = 1, T_NUM = 2, T_STR = 3, T_OBJ = 4, T_ARR = 5, T_BIN = 6, T_BOOL = 7, T_DATE = 8, T_OTHER = 9;
type Part = (string | number)[];
/**
 * The tag's character. First-layout indexes use 0x01..0x09; ordered-binary escapes a string
 * starting below 0x1c with two extra bytes, so indexes created since (IndexDef.compactTags)
 * use 0x1c..0x24: same order, two bytes less per value.
 */
const tagChar = (tag: number, base: number) => String.fromCharCode(base + tag);
const COMPACT_TAGS = 0x1b;
const tagBase = (def: IndexDef) => (def.compactTags ? COMPACT_TAGS : 0);
/** First element of every entry of index `no`. */
const ixKey = (no: number) => String.fromCharCode(0x20 + no);

function typeTag(v: unknown): number {
  if (v === undefined || v === null) return T_NULL;
  if (typeof v === "number") return T_NUM;
  if (typeof v === "string") return T_STR;
  if (typeof v === "boolean") return T_BOOL;
  if (v instanceof Date) return T_DATE;
  if (Array.isArray(v)) return T_ARR;
  if (v instanceof Uint8Array) return T_BIN;
  if (isPlainObject(v)) return T_OBJ;
  return T_OTHER;
}

function keyPart(v: unknown, base: number): Part {
  const tag = typeTag(v);
  switch (tag) {
    case T_NULL: return [tagChar(T_NULL, base)];
    case T_NUM: return [tagChar(T_NUM, base), Number.isNaN(v) ? -Number.MAX_VALUE : (v as number)];
    case T_STR: return [tagChar(T_STR, base) + (v as string).slice(0, KEY_STRING_MAX)];
    case T_BOOL: return [tagChar(T_BOOL, base) + (v ? "1" : "0")];
    case T_DATE: return [tagChar(T_DATE, base), (v as Date).getTime()];
    case T_BIN: return [tagChar(T_BIN, base) + Buffer.from(v as Uint8Array).toString("base64").slice(0, KEY_STRING_MAX)];
    default: return [tagChar(tag, base) + String(JSON.stringify(v)).slice(0, KEY_STRING_MAX)];
  }
}

/** A value an index key holds whole (equality on it is exactly the key's range). */
function wholeInKey(v: unknown): boolean {
  if (typeof v === "string") return v.length <= KEY_STRING_MAX;
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0);
  if (v instanceof Date) return Number.isFinite(v.getTime());
  return typeof v === "boolean";
}

/** `{ [op]: value }` alone, with a value ($in: every value) an index key holds whole. */
function wholeIn(c: unknown, op: "$eq" | "$in"): boolean {
  if (!isPlainObject(c)) return false;
  const ops = Object.keys(c);
  if (ops.length !== 1 || ops[0] !== op) return false;
  return op === "$eq" ? wholeInKey(c.$eq) : Array.isArray(c.$in) && listFacts(c.$in).wholeInKey;
}

/** A filter's field conditions when it is a plain conjunction (top level and $and), each field once; else undefined. */
function conjunction(filter: Filter, out = new Map<string, unknown>()): Map<string, unknown> | undefined {
  for (const [key, condition] of Object.entries(filter)) {
    if (key === "$and") {
      if (!Array.isArray(condition)) return undefined;
      for (const f of condition) if (!isPlainObject(f) || !conjunction(f, out)) return undefined;
    } else if (key.startsWith("$") || out.has(key)) return undefined;
    else out.set(key, condition);
  }
  return out;
}

/** A value the planner can look up in an index (equality or range bound). */
function indexable(v: unknown): boolean {
  return typeof v === "string" || (typeof v === "number" && !Number.isNaN(v)) || typeof v === "boolean" || v instanceof Date;
}

export interface IndexDef {
  no: number;
  fields: string[];
  unique: boolean;
  sparse: boolean;
  ttl?: number;
  /** Some document has an array value in an indexed field: entries may repeat a document. */
  multikey?: boolean;
  /**
   * The last field is _id, and it is the raw _id every entry ends with anyway (not a tagged key
   * part followed by the _id again). Set on indexes created since this layout exists; older
   * indexes keep theirs.
   */
  idTail?: boolean;
  /** Type tags are 0x1c..0x24 (see tagChar). Set on indexes created since; older ones keep 0x01..0x09. */
  compactTags?: boolean;
  /**
   * A wildcard index (MongoDB's `{ ..., "<root>.$**": 1 }`, the wildcard field last): the
   * sub-document at this root path. Entries hold the other fields' values, then the path
   * under the root and the value found there (one entry per element of an array), then the _id.
   */
  wildcard?: string;
}

/** `<root>.$**`: a wildcard key of createIndex. */
const isWildcardField = (field: string) => field === "$**" || field.endsWith(".$**");

/**
 * Index entries of a wildcard index: for each value of the fields before the wildcard, one
 * tuple [...those values, path under the root, value] per distinct value found under the root
 * (sub-documents are walked, arrays give each element; arrays of arrays are not indexed, as
 * a query on such a path never matches an element of the inner array).
 */
function wildcardTuples(doc: Record<string, unknown>, def: IndexDef): unknown[][] {
  const pairs: [string, unknown][] = [];
  const seen = new Set<string>();
  const emit = (path: string, v: unknown) => {
    const key = JSON.stringify([path, ...keyPart(v, 0)]);
    if (seen.has(key)) return;
    seen.add(key);
    pairs.push([path, v]);
  };
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) {
      for (const item of v) {
        if (isPlainObject(item)) walk(item, path);
        else if (path && item !== undefined && !Array.isArray(item)) emit(path, item);
      }
    } else if (isPlainObject(v)) {
      // A key holding a dot (or empty) is never reached by a dotted path: no entry.
      for (const key in v) if (v[key] !== undefined && key !== "" && !key.includes(".")) walk(v[key], path ? `${path}.${key}` : key);
    } else if (path && v !== undefined) emit(path, v);
  };
  for (const v of valuesAt(doc, def.wildcard!.split("."))) if (v !== undefined) walk(v, "");
  if (pairs.length === 0) return [];
  const prefixes = def.fields.length > 1 ? indexTuples(doc, { ...def, fields: def.fields.slice(0, -1), wildcard: undefined, sparse: false }) : [[]];
  if (prefixes.length * pairs.length > 10_000) throw new Error(`too many index entries for one document (index on ${def.fields.join(",")})`);
  const tuples: unknown[][] = [];
  for (const prefix of prefixes) for (const [path, v] of pairs) tuples.push([...prefix, path, v]);
  return tuples;
}

interface CollectionMeta {
  next: number;
  indexes: IndexDef[];
}

/** One index's entries for a document's tuples, by a text form of each entry's key. */
function entryKeysOf(def: IndexDef, tuples: unknown[][], id: string): Map<string, (string | number)[]> {
  const keys = new Map<string, (string | number)[]>();
  for (const tuple of tuples) {
    const key = entryKey(def, tuple, id);
    keys.set(JSON.stringify(key), key);
  }
  return keys;
}

/** The same index values, of the same types (an entry's key tells `1` from `"1"`, null from missing). */
function sameTuples(a: unknown[][], b: unknown[][]): boolean {
  if (a.length !== b.length) return false;
  for (let t = 0; t < a.length; t++) {
    const x = a[t];
    const y = b[t];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqual(x[i], y[i]) || typeTag(x[i]) !== typeTag(y[i])) return false;
  }
  return true;
}

/** Raw values of one index entry of a document (cartesian product over array fields). */
function indexTuples(doc: Record<string, unknown>, def: IndexDef): unknown[][] {
  if (def.wildcard !== undefined) return wildcardTuples(doc, def);
  // Fast path: top-level fields holding single values (the common case).
  if (def.fields.every((f) => !f.includes(".") && !Array.isArray(doc[f]))) {
    const tuple = def.fields.map((f) => doc[f]);
    return def.sparse && tuple.every((v) => v === undefined) ? [] : [tuple];
  }
  const perField: unknown[][] = [];
  let present = false;
  for (const field of def.fields) {
    const out: unknown[] = [];
    for (const v of valuesAt(doc, field.split("."))) {
      if (Array.isArray(v)) {
        if (v.length === 0) out.push(undefined);
        for (const item of v) out.push(item);
      } else out.push(v);
    }
    const distinct: unknown[] = [];
    for (const v of out) if (!distinct.some((d) => deepEqual(d, v) && typeTag(d) === typeTag(v))) distinct.push(v);
    if (distinct.some((v) => v !== undefined)) present = true;
    perField.push(distinct.length ? distinct : [undefined]);
  }
  if (def.sparse && !present) return [];
  let tuples: unknown[][] = [[]];
  for (const values of perField) {
    const next: unknown[][] = [];
    for (const t of tuples) for (const v of values) next.push([...t, v]);
    tuples = next;
    if (tuples.length > 10_000) throw new Error(`too many index entries for one document (index on ${def.fields.join(",")})`);
  }
  return tuples;
}

/** The fields an entry holds as key parts (an idTail index's _id is the raw _id at the end). */
const partFields = (def: IndexDef): string[] => (def.idTail ? def.fields.slice(0, -1) : def.fields);

/** Key of the entries for these values (in an idTail index, the last value is the _id: complete). */
const flatKey = (def: IndexDef, tuple: unknown[]): (string | number)[] => {
  const key: (string | number)[] = [ixKey(def.no)];
  const parts = def.idTail ? tuple.length - 1 : tuple.length;
  const base = tagBase(def);
  for (let i = 0; i < parts; i++) for (const part of keyPart(tuple[i], base)) key.push(part);
  if (def.idTail) key.push(tuple[parts] as string);
  return key;
};

/** The stored key of an entry: the values, then the _id (raw, so it can be read back). */
const entryKey = (def: IndexDef, tuple: unknown[], id: string): (string | number)[] => {
  const key = flatKey(def, tuple);
  if (!def.idTail) key.push(id);
  return key;
};

/**
 * The document an index entry describes (its key fields and _id), when the key holds every
 * value whole: undefined for a string that may have been cut, null or a missing field (the key
 * does not tell them apart), NaN, objects, arrays and other types.
 */
function decodeEntry(key: (string | number)[], fields: string[], base: number): Doc | undefined {
  const doc: Record<string, unknown> = { _id: key[key.length - 1] };
  let i = 1;
  for (const field of fields) {
    const part = key[i];
    if (typeof part !== "string" || part.length === 0) return undefined;
    const tag = part.charCodeAt(0) - base;
    let value: unknown;
    if (tag === T_STR) {
      if (part.length - 1 >= KEY_STRING_MAX) return undefined;
      value = part.slice(1);
      i++;
    } else if (tag === T_BOOL) {
      value = part[1] === "1";
      i++;
    } else if (tag === T_NUM || tag === T_DATE) {
      const n = key[i + 1];
      if (typeof n !== "number" || n === -Number.MAX_VALUE || Object.is(n, -0)) return undefined;
      value = tag === T_NUM ? n : new Date(n);
      i += 2;
    } else return undefined;
    if (field.includes(".")) setPath(doc, field, value);
    else doc[field] = value;
  }
  return doc as Doc;
}

/** The _id of an index entry: always its last element. */
const entryId = (key: unknown): string => (key as string[])[(key as string[]).length - 1];

/** lmdb-js keeps the msgpack record structures of a database under this key, beside the documents. */
const STRUCTURES = Symbol.for("structures");

// ---------------------------------------------------------------------------------------------
// Sorting (MongoDB order of types; arrays sort by their smallest / largest element).

function compareValues(a: unknown, b: unknown): number {
  const ta = typeTag(a), tb = typeTag(b);
  if (ta !== tb) return ta - tb;
  switch (ta) {
    case T_NULL: return 0;
    case T_NUM: return (a as number) - (b as number);
    case T_STR: return a! < b! ? -1 : a! > b! ? 1 : 0;
    case T_BOOL: return Number(a) - Number(b);
    case T_DATE: return (a as Date).getTime() - (b as Date).getTime();
    default: {
      const sa = JSON.stringify(a), sb = JSON.stringify(b);
      return sa < sb ? -1 : sa > sb ? 1 : 0;
    }
  }
}

function sortValue(doc: Record<string, unknown>, path: string, dir: 1 | -1): unknown {
  const v = getPath(doc, path);
  if (!Array.isArray(v) || v.length === 0) return v;
  return v.reduce((best, item) => (compareValues(item, best) * dir < 0 ? item : best));
}

function sorter(sort: Sort): (a: Doc, b: Doc) => number {
  const keys = Object.entries(sort);
  return (a, b) => {
    for (const [path, dir] of keys) {
      const c = compareValues(sortValue(a, path, dir), sortValue(b, path, dir));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}

function project<T extends Doc>(doc: T, projection: Record<string, 0 | 1> | undefined): T {
  if (!projection) return doc;
  const entries = Object.entries(projection);
  if (entries.length === 0) return doc;
  const including = entries.some(([k, v]) => k !== "_id" && v) || (entries.length === 1 && projection._id === 1);
  if (!including) {
    for (const [path] of entries) unsetPath(doc, path);
    return doc;
  }
  const out: Record<string, unknown> = {};
  if (projection._id !== 0) out._id = doc._id;
  for (const [path, v] of entries) {
    if (!v || path === "_id") continue;
    // A top-level field (most projections) needs no path walking.
    const value = path.includes(".") ? getPath(doc, path) : doc[path];
    if (value === undefined) continue;
    if (path.includes(".")) setPath(out, path, value);
    else out[path] = value;
  }
  return out as T;
}

// ---------------------------------------------------------------------------------------------
// Planning

interface FieldCondition {
  eq?: unknown;
  hasEq?: boolean;
  in?: unknown[];
  lo?: unknown;
  hi?: unknown;
}

/** What the planner asks of an `$in` list, found in one pass. */
interface ListFacts {
  /** Every value can be looked up in an index (indexable). */
  indexable: boolean;
  /** Every value is held whole by an index key (wholeInKey). */
  wholeInKey: boolean;
  /** Strings in strictly ascending (JavaScript) order. */
  ascending: boolean;
  /** Strings, all ASCII. */
  ascii: boolean;
}

/**
 * Facts of frozen lists, kept while the list lives: a resolved audience's ids (hundreds of
 * thousands) are planned for, counted and paged through many times, and checking every id
 * for each of these questions on each query was a fifth of counting such an audience.
 */
const frozenListFacts = new WeakMap<unknown[], ListFacts>();

function listFacts(list: unknown[]): ListFacts {
  const frozen = Object.isFrozen(list);
  const known = frozen ? frozenListFacts.get(list) : undefined;
  if (known) return known;
  const facts: ListFacts = { indexable: true, wholeInKey: true, ascending: true, ascii: true };
  for (let i = 0; i < list.length; i++) {
    const v = list[i];
    if (typeof v === "string") {
      if (v.length > KEY_STRING_MAX) facts.wholeInKey = false;
      if (facts.ascii && !ASCII.test(v)) facts.ascii = false;
      if (facts.ascending && i > 0 && !((list[i - 1] as string) < v)) facts.ascending = false;
      continue;
    }
    facts.ascending = facts.ascii = false;
    if (!indexable(v)) facts.indexable = false;
    if (!wholeInKey(v)) facts.wholeInKey = false;
  }
  if (frozen) frozenListFacts.set(list, facts);
  return facts;
}

/** Conditions on top-level fields (and inside top-level $and) that an index can answer. */
function indexableConditions(filter: Filter, out = new Map<string, FieldCondition>()): Map<string, FieldCondition> {
  for (const [key, condition] of Object.entries(filter)) {
    if (key === "$and" && Array.isArray(condition)) {
      for (const f of condition) if (isPlainObject(f)) indexableConditions(f, out);
      continue;
    }
    if (key.startsWith("$")) continue;
    const c: FieldCondition = out.get(key) ?? {};
    if (indexable(condition)) {
      c.eq = condition;
      c.hasEq = true;
    } else if (isPlainObject(condition) && Object.keys(condition)[0]?.startsWith("$")) {
      for (const [op, arg] of Object.entries(condition)) {
        if (op === "$eq" && indexable(arg)) {
          c.eq = arg;
          c.hasEq = true;
        } else if (op === "$in" && Array.isArray(arg) && listFacts(arg).indexable) {
          c.in = arg;
        }
        else if ((op === "$gt" || op === "$gte") && indexable(arg) && typeof arg !== "boolean") {
          if (c.lo === undefined || compareValues(arg, c.lo) > 0) c.lo = arg;
        } else if ((op === "$lt" || op === "$lte") && indexable(arg) && typeof arg !== "boolean") {
          if (c.hi === undefined || compareValues(arg, c.hi) < 0) c.hi = arg;
        }
      }
      if (c.lo !== undefined && c.hi !== undefined && typeTag(c.lo) !== typeTag(c.hi)) c.hi = undefined;
    } else continue;
    out.set(key, c);
  }
  return out;
}

type Range = { start: unknown[] | string; end: unknown[] | string };

export interface Plan {
  kind: "ids" | "index" | "primary";
  score: number;
  ordered: boolean;
  reverse: boolean;
  ids?: string[];
  /** The part of `ids` within the filter's _id bounds ([from, to)); all of them when absent. */
  idSlice?: [number, number];
  index?: IndexDef;
  ranges?: Range[];
  /**
   * Index plans whose entries are not in _id order themselves, read in _id order: "merge"
   * (each range is in _id order: one value of a wildcard path each) or "collect" (the ranges'
   * ids gathered, kept within idBounds and sorted, before any document is read).
   */
  idOrder?: "merge" | "collect";
  idBounds?: { lo?: string; hi?: string };
  /** Each document has at most one entry in the (single) range: no need to skip repeats. */
  distinct?: boolean;
}

/** At most this many ranges are merged in _id order (one cursor each); more are collected. */
const MERGE_MAX = 64;

/** Index key range for one value of the field at `position`, or the type-bracketed bounds. */
function boundsFor(prefix: (string | number)[], c: FieldCondition | undefined, base: number): Range[] | undefined {
  if (!c) return undefined;
  const values = c.hasEq ? [c.eq] : c.in;
  if (values) {
    return values.map((v) => {
      const p = keyPart(v, base);
      return { start: [...prefix, ...p], end: [...prefix, ...p, HIGH] };
    });
  }
  const bound = c.lo ?? c.hi;
  if (bound === undefined) return undefined;
  const tag = typeTag(bound);
  return [
    {
      start: c.lo !== undefined ? [...prefix, ...keyPart(c.lo, base)] : [...prefix, tagChar(tag, base)],
      // A cut-off (long) upper bound cannot bound the stored (also cut-off) strings: whole bracket.
      end: c.hi !== undefined && !(typeof c.hi === "string" && c.hi.length > KEY_STRING_MAX)
        ? [...prefix, ...keyPart(c.hi, base), HIGH]
        : [...prefix, tagChar(tag + 1, base)],
    },
  ];
}

/** Sorted distinct copies of frozen `$in` lists, kept while the list lives (a frozen list cannot change). */
const sortedLists = new WeakMap<string[], string[]>();
/** Sorted id lists (of frozen lists) whose ids are all ASCII: JavaScript's order is the index's byte order. */
const asciiLists = new WeakSet<string[]>();
const ASCII = /^[\x20-\x7e]*$/;

/**
 * An `$in` list of ids sorted and without repeats. A list already in strictly ascending order
 * is used as it is; a frozen one (a resolved audience paged through) is sorted once, not per page.
 */
function sortedIdList(list: string[]): string[] {
  const frozen = Object.isFrozen(list);
  const known = frozen ? sortedLists.get(list) : undefined;
  if (known) return known;
  const facts = listFacts(list);
  const ids = facts.ascending ? list : [...new Set(list)].sort();
  if (frozen) {
    sortedLists.set(list, ids);
    if (facts.ascii) asciiLists.add(ids);
  }
  return ids;
}

export function planQuery(filter: Filter, sort: Sort | undefined, indexes: IndexDef[]): Plan {
  const conds = indexableConditions(filter);
  const sortKeys = Object.entries(sort ?? {});
  const idCond = conds.get("_id");

  // 1. _id equality / $in: direct gets.
  // (A frozen list sorted before is known to hold strings: not walked again for every page.)
  const idStrings = (c: FieldCondition) =>
    (!c.hasEq || typeof c.eq === "string") && (!c.in || sortedLists.has(c.in as string[]) || c.in.every((v) => typeof v === "string"));
  if (idCond && (idCond.hasEq || idCond.in) && idStrings(idCond)) {
    const ids = idCond.hasEq ? [idCond.eq as string] : sortedIdList(idCond.in as string[]);
    const ordered = sortKeys.length === 0 || ids.length <= 1 || (sortKeys.length === 1 && sortKeys[0][0] === "_id" && sortKeys[0][1] === 1);
    // A page after a cursor (`_id > last`) starts at it by bisection: earlier ids are never read.
    const from = typeof idCond.lo === "string" ? bisect(ids, idCond.lo) : 0;
    const to = typeof idCond.hi === "string" ? bisect(ids, idCond.hi, true) : ids.length;
    return { kind: "ids", score: 1000, ordered, reverse: false, ids, ...(from > 0 || to < ids.length ? { idSlice: [from, Math.max(from, to)] as [number, number] } : {}) };
  }

  const sortMatches = (sequence: string[], constant: Set<string>): { ok: boolean; reverse: boolean } => {
    const keys = sortKeys.filter(([k]) => !constant.has(k));
    if (keys.length === 0) return { ok: true, reverse: false };
    const dir = keys[0][1];
    if (!keys.every(([, d]) => d === dir)) return { ok: false, reverse: false };
    const ok = keys.every(([k], i) => sequence[i] === k);
    return { ok, reverse: dir === -1 };
  };

  // 2. The _id tree (optionally with an _id range).
  let best: Plan;
  {
    const idRange = idCond && (typeof idCond.lo === "string" || typeof idCond.hi === "string");
    const constant = new Set([...conds].filter(([, c]) => c.hasEq).map(([k]) => k));
    const order = sortMatches(["_id"], constant);
    const range = {
      start: idRange && typeof idCond!.lo === "string" ? idCond!.lo : undefined,
      end: idRange && typeof idCond!.hi === "string" ? `${idCond!.hi}\u0000` : undefined,
    } as Range;
    best = { kind: "primary", score: (idRange ? 5 : 0) + (order.ok ? 3 : 0), ordered: order.ok, reverse: order.reverse, ranges: [range] };
  }

  // 3. Secondary indexes.
  for (const def of indexes) {
    if (def.wildcard !== undefined) continue;
    const fields = [...def.fields, ...(def.fields.includes("_id") ? [] : ["_id"])];
    const keyFields = partFields(def);
    const prefix: (string | number)[] = [ixKey(def.no)];
    const constant = new Set<string>();
    let k = 0;
    for (; k < keyFields.length; k++) {
      const c = conds.get(keyFields[k]);
      if (!c?.hasEq) break;
      prefix.push(...keyPart(c.eq, tagBase(def)));
      constant.add(keyFields[k]);
    }
    let ranges: Range[] | undefined;
    let score = k * 10;
    if (k < fields.length) {
      const field = fields[k];
      const c = conds.get(field);
      if (k === keyFields.length) {
        // All index fields bound: entries run in _id order; an _id range narrows them.
        if (c && (typeof c.lo === "string" || typeof c.hi === "string")) {
          ranges = [{ start: typeof c.lo === "string" ? [...prefix, c.lo] : prefix, end: typeof c.hi === "string" ? [...prefix, `${c.hi}\u0000`] : [...prefix, HIGH] }];
          score += 5;
        }
      } else {
        ranges = boundsFor(prefix, c && !c.hasEq ? c : undefined, tagBase(def));
        if (ranges) score += ranges.length === 1 ? 5 : 4;
      }
    }
    if (score === 0) continue;
    if (def.unique && k === def.fields.length) score += 100;
    ranges ??= [{ start: prefix, end: [...prefix, HIGH] }];
    // Every key field bound by equality: one entry per document, in _id order, even where a
    // document holds several values (e.g. the members of one group in { workspaceId, groups, _id }).
    const allBound = k === keyFields.length && ranges.length === 1;
    const order = (!def.multikey || allBound) && ranges.length === 1 ? sortMatches(fields.slice(k), constant) : { ok: sortKeys.length === 0, reverse: false };
    if (order.ok) score += 3;
    // Between equally bound indexes, membership of an array (a group, a tag) is taken to be
    // more selective than a single-valued field (e.g. status, mostly SUBSCRIBED).
    if (def.multikey && allBound) score += 1;
    if (score > best.score) best = { kind: "index", score, ordered: order.ok, reverse: order.reverse, index: def, ranges, ...(def.multikey && allBound ? { distinct: true } : {}) };
  }

  // 4. Wildcard indexes: equality on every field before the wildcard, then one condition
  // (equality, $in, range) on a path under its root. A path is a key part of its own, so an
  // equality on it counts as one on two fields (path and value).
  const constant = new Set([...conds].filter(([, c]) => c.hasEq).map(([k]) => k));
  const rest = sortKeys.filter(([k]) => !constant.has(k));
  const idSort = rest.length === 1 && rest[0][0] === "_id";
  const reverse = idSort && rest[0][1] === -1;
  const idLo = typeof idCond?.lo === "string" ? idCond.lo : undefined;
  const idHi = typeof idCond?.hi === "string" ? idCond.hi : undefined;
  for (const def of indexes) {
    if (def.wildcard === undefined) continue;
    const base = tagBase(def);
    const prefix: (string | number)[] = [ixKey(def.no)];
    const before = def.fields.slice(0, -1);
    if (!before.every((f) => conds.get(f)?.hasEq)) continue;
    for (const f of before) prefix.push(...keyPart(conds.get(f)!.eq, base));
    const rootDot = `${def.wildcard}.`;
    for (const [field, c] of conds) {
      if (!field.startsWith(rootDot)) continue;
      const path = field.slice(rootDot.length);
      // A numeric segment may name an array position, which the entries do not record.
      if (path.split(".").some((seg) => seg === "" || seg.startsWith("$") || /^\d+$/.test(seg))) continue;
      let ranges = boundsFor([...prefix, ...keyPart(path, base)], c, base);
      if (!ranges) continue;
      // One value per range (equality, $in): its entries run in _id order, one per document.
      const byValue = c.hasEq === true || c.in !== undefined;
      let score = before.length * 10 + 10 + (c.hasEq ? 10 : c.in ? 9 : c.lo !== undefined && c.hi !== undefined ? 7 : 5);
      let idOrder: Plan["idOrder"];
      if (byValue && (idLo !== undefined || idHi !== undefined)) {
        ranges = ranges.map((r) => ({
          start: idLo !== undefined ? [...(r.start as unknown[]), idLo] : r.start,
          end: idHi !== undefined ? [...(r.start as unknown[]), `${idHi}\u0000`] : r.end,
        }));
        score += 5;
      }
      if (idSort && (ranges.length > 1 || !byValue)) idOrder = byValue && ranges.length <= MERGE_MAX ? "merge" : "collect";
      const ordered = rest.length === 0 || idSort;
      if (ordered) score += 3;
      if (score > best.score) {
        best = { kind: "index", score, ordered, reverse, index: def, ranges, idOrder, distinct: byValue && ranges.length === 1 };
        if (idOrder === "collect") best.idBounds = { lo: idLo, hi: idHi };
      }
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------

type Result<R> = { ok: R } | { err: unknown };

/**
 * The index entries of an insertMany, put in together at the end. LMDB splits a full page in
 * the middle unless the new key goes at its end, so a run of ascending keys put into the middle
 * of an index (e.g. a list sorted by email) leaves every page it passes half empty. Put in random
 * order they leave pages about 70% full, as random keys do; appends (ids that only grow) keep
 * their order and pack pages full. Unique checks within the batch: a possible collision with a
 * waiting entry puts the waiting entries in first, so the ordinary check sees them.
 */
class IndexBatch {
  private readonly entries = new Map<number, (string | number)[][]>();
  private readonly uniqueKeys = new Set<string>();

  add(meta: CollectionMeta, tuples: unknown[][][], id: string): void {
    meta.indexes.forEach((def, i) => {
      let list = this.entries.get(def.no);
      if (!list) this.entries.set(def.no, (list = []));
      for (const tuple of tuples[i]) {
        list.push(entryKey(def, tuple, id));
        if (def.unique) this.uniqueKeys.add(uniqueKey(def, tuple));
      }
    });
  }

  /** Whether a unique value of these tuples may already wait here (cut strings: may). */
  mayCollide(meta: CollectionMeta, tuples: unknown[][][]): boolean {
    if (this.uniqueKeys.size === 0) return false;
    return meta.indexes.some((def, i) => def.unique && tuples[i].some((tuple) => this.uniqueKeys.has(uniqueKey(def, tuple))));
  }

  flush(index: Database<Buffer, (string | number)[]>): void {
    for (const [no, keys] of this.entries) {
      let last: (string | number)[] | undefined;
      for (const key of index.getKeys({ start: [ixKey(no + 1)], end: [ixKey(no)], reverse: true, limit: 1 } as never)) last = key;
      let appends = last === undefined || compareKeys(keys[0], last) > 0;
      for (let i = 1; appends && i < keys.length; i++) appends = compareKeys(keys[i - 1], keys[i]) < 0;
      if (!appends) {
        for (let i = keys.length - 1; i > 0; i--) {
          const j = Math.floor(Math.random() * (i + 1));
          [keys[i], keys[j]] = [keys[j], keys[i]];
        }
      }
      for (const key of keys) index.putSync(key, EMPTY);
    }
    this.entries.clear();
    this.uniqueKeys.clear();
  }
}

const uniqueKey = (def: IndexDef, tuple: unknown[]): string => JSON.stringify(flatKey(def, tuple));

/** First position in sorted `ids` whose id is >= `id` (with `after`: > `id`). */
function bisect(ids: string[], id: string, after = false): number {
  let lo = 0, hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < id || (after && ids[mid] === id)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Reading a segment of each _id straight from the key bytes (findIdSegments): the key is not
 * decoded (no array, no string per part), the segment becomes one flat string. What the keys
 * of a range are read for is set before each step of the cursor (`segmentRead`), so cursors
 * of several reads may alternate.
 */
interface SegmentReader {
  /** Keys are a documents tree's (the whole key is the _id), not index entries (the _id is the last part). */
  primary: boolean;
  prefix: Buffer;
  /** The byte the segment ends before, or -1 (to the _id's end). */
  end: number;
  segment: IdSegment;
  /** _ids (as bytes) a bound leaves out: `$gt` / `$lt` bounds, which the key range includes. */
  excluded: Buffer[];
}
const LEFT_OUT = Symbol("left out");
let segmentRead: SegmentReader | undefined;

/** The keyEncoder of the key-reading handles: writes keys as lmdb-js does, reads segments. */
const segmentKeys = {
  writeKey: writeOrderedKey,
  enableNullTermination: () => undefined,
  readKey(buf: Buffer, start: number, end: number): string | symbol {
    const r = segmentRead!;
    let idStart = start;
    if (!r.primary) {
      let sep = end - 1;
      while (sep >= start && buf[sep] !== 0) sep--;
      // An escaped byte (4, c) in the _id, or no separator: decoded the slow way.
      if (sep < start || (sep > start && buf[sep - 1] === 4)) return slowSegment(buf, start, end, r);
      idStart = sep + 1;
    }
    const from = idStart + r.prefix.length;
    if (from > end) return LEFT_OUT;
    for (let i = 0; i < r.prefix.length; i++) if (buf[idStart + i] !== r.prefix[i]) return LEFT_OUT;
    let to = end;
    for (let i = idStart; i < end; i++) {
      const b = buf[i];
      // Printable ASCII only (no escape bytes, no UTF-8 sequences): else the slow way.
      if (b < 0x20 || b > 0x7e) return slowSegment(buf, start, end, r);
      if (i >= from && b === r.end && to === end) to = i;
    }
    for (const x of r.excluded) if (x.length === end - idStart && buf.compare(x, 0, x.length, idStart, end) === 0) return LEFT_OUT;
    return buf.toString("latin1", from, to);
  },
};

function slowSegment(buf: Buffer, start: number, end: number, r: SegmentReader): string | symbol {
  const key = readOrderedKey(buf, start, end) as unknown;
  const id = Array.isArray(key) ? key[key.length - 1] : key;
  if (typeof id !== "string") return LEFT_OUT;
  if (r.excluded.some((x) => x.equals(Buffer.from(id, "utf8")))) return LEFT_OUT;
  const part = idSegment(id, r.segment);
  return part === undefined ? LEFT_OUT : Buffer.from(part, "utf8").toString("utf8");
}

const PRINTABLE = /^[\x20-\x7e]*$/;

class LmdbCollection<T extends Doc> implements Collection<T> {
  readonly docs: Database<Doc, string>;
  readonly index: Database<Buffer, (string | number)[]>;
  /** The last "collect" plan's sorted ids, valid while the store's last transaction id is `txnId`. */
  private collected: { key: string; txnId: number; ids: string[] } | undefined;
  private metaCache: CollectionMeta;
  /** The stored bytes `metaCache` was decoded from. */
  private metaBytes: Buffer | undefined;

  constructor(
    private readonly store: LmdbStore,
    readonly name: string,
  ) {
    // Shared record structures: field names are stored once per collection, not in every document.
    // LZ4 from 64 bytes up: a fifth off a typical contact (the email twice, as typed and lowercased,
    // costs one copy). No dictionary: lmdb loads it again for every value (~9 us per document),
    // and the stored bytes then depend on no file outside this format. Values stored uncompressed
    // (older stores, small documents) stay readable: a status byte tells them apart.
    this.docs = store.openDb<Database<Doc, string>>(`d:${name}`, {
      sharedStructuresKey: STRUCTURES,
      compression: { threshold: 64, dictionary: NO_DICTIONARY },
    });
    this.index = store.openDb<Database<Buffer, (string | number)[]>>(`i:${name}`, { encoding: "binary" });
    this.metaCache = this.readMeta();
  }

  private readMeta(): CollectionMeta {
    return (this.store.meta.get(this.name) as CollectionMeta | undefined) ?? { next: 1, indexes: [] };
  }

  /**
   * Fresh definitions inside a write transaction (another process may have added an index).
   * Decoded again only when the stored bytes changed: every write asks, and decoding them
   * each time was 2 % of the email service's CPU.
   */
  private metaInTxn(): CollectionMeta {
    const stored = this.store.meta.getBinary(this.name);
    if (stored && this.metaBytes?.equals(stored)) return this.metaCache;
    this.metaBytes = stored;
    this.metaCache = this.readMeta();
    return this.metaCache;
  }

  private duplicateKey(): DuplicateKeyError {
    return new DuplicateKeyError(`duplicate key in collection "${this.name}"`);
  }

  private async write<R>(fn: () => R): Promise<R> {
    this.store.assertOpen();
    return this.store.transact(fn);
  }

  // --- stored documents ----------------------------------------------------------------------
  // A stored document holds `_id: undefined` (3 bytes) in place of its _id, which is its key:
  // the id is not stored twice, and the field keeps its place (first) in the decoded object.
  // Documents stored before this layout hold their _id; reading sets it from the key either way.

  private getDoc(id: string): Doc | undefined {
    const doc = this.docs.get(id);
    if (doc) doc._id = id;
    return doc;
  }

  /** Stores a document under its _id (encoded synchronously, so the object is restored at once). */
  private putValue(doc: Doc, noOverwrite = false): boolean {
    const id = doc._id;
    (doc as { _id: unknown })._id = undefined;
    try {
      // Inside a write transaction putSync answers whether it wrote (lmdb's types say void):
      // false only when `noOverwrite` met a taken key.
      return (this.docs.putSync(id, doc, { noOverwrite }) as unknown) !== false;
    } finally {
      doc._id = id;
    }
  }

  // --- reading ---------------------------------------------------------------------------

  private expired(doc: Doc, meta: CollectionMeta, now: number): boolean {
    for (const def of meta.indexes) {
      if (def.ttl === undefined) continue;
      const at = getPath(doc, def.fields[0]);
      if (at instanceof Date && at.getTime() + def.ttl * 1000 <= now) return true;
    }
    return false;
  }

  /** Matching documents in plan order (lazily: a caller may stop early). */
  private *candidates(filter: Filter, plan: Plan, meta: CollectionMeta): Generator<Doc> {
    const now = Date.now();
    const hasTtl = meta.indexes.some((d) => d.ttl !== undefined);
    const matches = compileFilter(filter);
    const accept = (doc: Doc | undefined): doc is Doc =>
      doc !== undefined && (!hasTtl || !this.expired(doc, meta, now)) && matches(doc);
    if (plan.kind === "ids") {
      const ids = plan.ids!;
      const [from, to] = plan.idSlice ?? [0, ids.length];
      for (let i = from; i < to; i++) {
        const doc = this.getDoc(ids[i]);
        if (accept(doc)) yield doc;
      }
      return;
    }
    if (plan.kind === "primary") {
      const { start, end } = plan.ranges![0];
      const range = plan.reverse ? { start: end, end: start, reverse: true } : { start, end };
      for (const { key, value } of this.docs.getRange(range as never)) {
        if (typeof key === "symbol") continue;
        value._id = key;
        if (accept(value)) yield value;
      }
      return;
    }
    for (const id of this.indexIds(plan)) {
      const doc = this.getDoc(id);
      if (accept(doc)) yield doc;
    }
  }

  /**
   * The sorted _ids of a "collect" plan's ranges. Paging through them (`_id > last`, one page
   * per query) would read every range again for each page, so the last list is kept while the
   * store has committed nothing since (the environment's last transaction id, which counts
   * every process's commits); never inside a write transaction, which sees its own changes.
   * The id is taken before a fresh read snapshot is started for the list, so the list holds at
   * least what that transaction committed, and is used again only while nothing came after it.
   */
  private collectedIds(plan: Plan): string[] {
    const key = `${plan.index!.no}\u0000${JSON.stringify(plan.ranges)}`;
    const writing = this.store.writing > 0;
    const txnId = writing ? undefined : this.store.lastTxnId();
    const cached = this.collected;
    if (!writing && cached && cached.key === key && cached.txnId === txnId) return cached.ids;
    if (!writing) this.store.root.resetReadTxn();
    const ids = new Set<string>();
    for (const r of plan.ranges!) for (const k of this.index.getKeys({ start: r.start, end: r.end } as never)) ids.add(entryId(k));
    // JavaScript's order of strings: the one matchesFilter pages by (`_id > last`); sorting
    // with compareKeys instead made the sort cost as much as reading the keys.
    const sorted = [...ids].sort();
    if (!writing) this.collected = { key, txnId: txnId!, ids: sorted };
    return sorted;
  }

  /** The _ids an index plan's ranges hold, each once, in plan order (see Plan.idOrder). */
  private *indexIds(plan: Plan): Generator<string> {
    const ranges = plan.ranges!;
    const oriented = (r: Range) => (plan.reverse ? { start: r.end, end: r.start, reverse: true } : { start: r.start, end: r.end });
    if (plan.idOrder === "collect") {
      const sorted = this.collectedIds(plan);
      const { lo, hi } = plan.idBounds ?? {};
      // The slice within the _id bounds (a page after a cursor: found by bisection).
      const from = lo === undefined ? 0 : bisect(sorted, lo);
      const to = hi === undefined ? sorted.length : bisect(sorted, hi, true);
      if (plan.reverse) for (let i = to - 1; i >= from; i--) yield sorted[i];
      else for (let i = from; i < to; i++) yield sorted[i];
      return;
    }
    if (plan.idOrder === "merge") {
      // Every range is in _id order: take the smallest (reverse: largest) head each time.
      const cursors = ranges.map((r) => this.index.getKeys(oriented(r) as never)[Symbol.iterator]());
      const heads = cursors.map((c) => {
        const n = c.next();
        return n.done ? undefined : entryId(n.value);
      });
      const dir = plan.reverse ? -1 : 1;
      try {
        for (;;) {
          let best: string | undefined;
          for (const h of heads) if (h !== undefined && (best === undefined || compareKeys(h, best) * dir < 0)) best = h;
          if (best === undefined) return;
          for (let i = 0; i < heads.length; i++) {
            while (heads[i] !== undefined && compareKeys(heads[i]!, best) === 0) {
              const n = cursors[i].next();
              heads[i] = n.done ? undefined : entryId(n.value);
            }
          }
          yield best;
        }
      } finally {
        for (const c of cursors) c.return?.();
      }
    }
    const seen = !plan.distinct && (plan.index!.multikey || ranges.length > 1) ? new Set<string>() : undefined;
    for (const r of ranges) {
      for (const key of this.index.getKeys(oriented(r) as never)) {
        const id = entryId(key);
        if (seen) {
          if (seen.has(id)) continue;
          seen.add(id);
        }
        yield id;
      }
    }
  }

  /**
   * A covered read (as MongoDB has): when the projection, the filter and the sort name only
   * fields the plan's keys hold (the _id for the documents tree and "ids" plans; the fields of
   * a single-valued, non-wildcard index otherwise), the matching documents are built from the
   * keys, checked with matchesFilter like any candidate, and no document is read. An entry whose
   * values the key does not hold whole (a cut string, null or a missing field, an object) is
   * answered from its document. Undefined when the read is not covered.
   */
  private covered(filter: Filter, plan: Plan, meta: CollectionMeta, options: FindOptions & { sort?: Sort }): Generator<Doc> | undefined {
    if (meta.indexes.some((d) => d.ttl !== undefined) || plan.idOrder !== undefined) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    const wanted = Object.entries(options.projection!);
    // Only an including projection (one excluding fields keeps every other one).
    if (!wanted.some(([k, v]) => k !== "_id" && v) && !(wanted.length === 1 && options.projection!._id === 1)) return undefined;
    const fields = new Set<string>([...conds.keys(), ...Object.keys(options.sort ?? {}), ...wanted.filter(([, v]) => v).map(([k]) => k)]);
    fields.delete("_id");
    if (plan.kind === "ids" || plan.kind === "primary") return fields.size === 0 ? this.coveredIds(filter, plan) : undefined;
    const def = plan.index!;
    if (def.wildcard !== undefined || def.multikey) return undefined;
    const held = partFields(def);
    if (![...fields].every((f) => held.includes(f))) return undefined;
    return this.coveredEntries(filter, plan, def);
  }

  private *coveredIds(filter: Filter, plan: Plan): Generator<Doc> {
    const matches = compileFilter(filter);
    if (plan.kind === "ids") {
      const ids = plan.ids!;
      const [from, to] = plan.idSlice ?? [0, ids.length];
      for (let i = from; i < to; i++) {
        const doc = { _id: ids[i] };
        if (this.docs.doesExist(ids[i]) && matches(doc)) yield doc;
      }
      return;
    }
    const { start, end } = plan.ranges![0];
    const range = plan.reverse ? { start: end, end: start, reverse: true } : { start, end };
    for (const key of this.docs.getKeys(range as never)) {
      if (typeof key === "symbol") continue;
      const doc = { _id: key };
      if (matches(doc)) yield doc;
    }
  }

  private *coveredEntries(filter: Filter, plan: Plan, def: IndexDef): Generator<Doc> {
    const held = partFields(def);
    const base = tagBase(def);
    const matches = compileFilter(filter);
    for (const r of plan.ranges!) {
      const range = plan.reverse ? { start: r.end, end: r.start, reverse: true } : { start: r.start, end: r.end };
      for (const key of this.index.getKeys(range as never)) {
        const doc = decodeEntry(key as (string | number)[], held, base) ?? this.getDoc(entryId(key));
        if (doc && matches(doc)) yield doc;
      }
    }
  }

  private select(filter: Filter, options: FindOptions & { sort?: Sort } = {}): Doc[] {
    const meta = this.metaCache;
    const plan = planQuery(filter, options.sort, meta.indexes);
    const skip = options.skip ?? 0;
    const limit = options.limit && options.limit > 0 ? options.limit : Infinity;
    const out: Doc[] = [];
    const source = (options.projection && this.covered(filter, plan, meta, options)) || this.candidates(filter, plan, meta);
    if (plan.ordered) {
      let skipped = 0;
      for (const doc of source) {
        if (skipped < skip) {
          skipped++;
          continue;
        }
        out.push(doc);
        if (out.length >= limit) break;
      }
      return out;
    }
    for (const doc of source) out.push(doc);
    if (options.sort && Object.keys(options.sort).length > 0) out.sort(sorter(options.sort));
    return out.slice(skip, skip + limit);
  }

  // --- writing (inside a transaction) --------------------------------------------------------

  private entryKeys(doc: Doc, meta: CollectionMeta, tuples = this.tuplesOf(doc, meta)): Map<string, (string | number)[]> {
    const keys = new Map<string, (string | number)[]>();
    meta.indexes.forEach((def, i) => {
      for (const [k, key] of entryKeysOf(def, tuples[i], doc._id)) keys.set(k, key);
    });
    return keys;
  }

  private tuplesOf(doc: Doc, meta: CollectionMeta): unknown[][][] {
    return meta.indexes.map((def) => indexTuples(doc, def));
  }

  private removeDoc(doc: Doc, meta: CollectionMeta): void {
    for (const key of this.entryKeys(doc, meta).values()) this.index.removeSync(key);
    this.docs.removeSync(doc._id);
  }

  /** Throws DuplicateKeyError if `doc` collides on a unique index (expired holders are removed). */
  private checkUnique(doc: Doc, meta: CollectionMeta, now: number, only?: IndexDef, tuples?: unknown[][][]): void {
    const defs = only ? [only] : meta.indexes;
    for (let d = 0; d < defs.length; d++) {
      const def = defs[d];
      if (!def.unique) continue;
      for (const tuple of tuples?.[d] ?? indexTuples(doc, def)) {
        const prefix = flatKey(def, tuple);
        for (const key of this.index.getKeys({ start: prefix, end: [...prefix, HIGH] } as never)) {
          const otherId = entryId(key);
          if (otherId === doc._id) continue;
          const other = this.getDoc(otherId);
          if (!other) continue;
          if (!indexTuples(other, def).some((t) => t.every((v, i) => deepEqual(v, tuple[i]) && typeTag(v) === typeTag(tuple[i])))) continue;
          if (this.expired(other, meta, now)) {
            this.removeDoc(other, meta);
            continue;
          }
          throw this.duplicateKey();
        }
      }
    }
  }

  /**
   * Stores `next` (replacing `prev`), keeping the index entries in step. With `batch` (inserts
   * of one insertMany), the new index entries wait in it and go in together (see IndexBatch).
   */
  private putDoc(prev: Doc | undefined, next: Doc, meta: CollectionMeta, batch?: IndexBatch): void {
    if (!prev && meta.indexes.length === 0) {
      // No index (so no TTL either): the put itself refuses a taken _id (MDB_NOOVERWRITE),
      // without reading it first. An import's insertMany of thousands saves a read each.
      if (!this.putValue(next, true)) throw this.duplicateKey();
      return;
    }
    const now = Date.now();
    if (!prev) {
      const existing = this.getDoc(next._id);
      if (existing) {
        if (!this.expired(existing, meta, now)) throw this.duplicateKey();
        batch?.flush(this.index);
        this.removeDoc(existing, meta);
      }
    }
    const tuples = this.tuplesOf(next, meta);
    if (batch?.mayCollide(meta, tuples)) batch.flush(this.index);
    this.checkUnique(next, meta, now, undefined, tuples);
    if (batch && !prev) {
      batch.add(meta, tuples, next._id);
    } else if (prev) {
      const previous = this.tuplesOf(prev, meta);
      meta.indexes.forEach((def, i) => {
        // Most updates leave most indexed fields alone: their entries stay as they are.
        if (sameTuples(previous[i], tuples[i])) return;
        const before = entryKeysOf(def, previous[i], prev._id);
        const after = entryKeysOf(def, tuples[i], next._id);
        for (const [k, key] of before) if (!after.has(k)) this.index.removeSync(key);
        for (const [k, key] of after) if (!before.has(k)) this.index.putSync(key, EMPTY);
      });
    } else {
      meta.indexes.forEach((def, i) => {
        for (const tuple of tuples[i]) this.index.putSync(entryKey(def, tuple, next._id), EMPTY);
      });
    }
    this.putValue(next);
    if (tuples.some((t, i) => t.length > 1 && !meta.indexes[i].multikey) || meta.indexes.some((def) => !def.multikey && def.fields.some((f) => f.includes(".")))) {
      this.noteMultikey(next, meta);
    } else if (meta.indexes.some((def) => !def.multikey && def.fields.some((f) => Array.isArray(next[f])))) this.noteMultikey(next, meta);
  }

  private noteMultikey(doc: Doc, meta: CollectionMeta): void {
    let changed = false;
    for (const def of meta.indexes) {
      if (def.multikey) continue;
      if (def.fields.some((f) => valuesAt(doc, f.split(".")).some((v) => Array.isArray(v)))) {
        def.multikey = true;
        changed = true;
      }
    }
    if (changed) this.store.meta.putSync(this.name, meta);
  }

  private insertUpsert(filter: Filter, update: Update, meta: CollectionMeta): Doc {
    const doc = applyUpdate(upsertSeed(filter), update, true) as Doc;
    if (doc._id === undefined) doc._id = newStoreId();
    this.putDoc(undefined, doc, meta);
    return doc;
  }

  private withId(doc: T): Doc {
    const copy = cloneValue(doc) as Doc;
    if (copy._id === undefined) copy._id = newStoreId();
    return copy;
  }

  // --- the port ---------------------------------------------------------------------------

  async insertOne(doc: T): Promise<void> {
    const copy = this.withId(doc);
    return this.write(() => this.putDoc(undefined, copy, this.metaInTxn()));
  }

  /** Ordered like MongoDB: on a duplicate, the documents before it stay. One transaction. */
  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return this.store.assertOpen();
    const copies = docs.map((d) => this.withId(d));
    return this.write(() => {
      const meta = this.metaInTxn();
      const batch = new IndexBatch();
      try {
        for (const copy of copies) this.putDoc(undefined, copy, meta, batch);
      } finally {
        batch.flush(this.index);
      }
    });
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    const [doc] = this.select(filter, { ...options, limit: 1 });
    return doc ? project(doc as T, options.projection) : null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    return this.select(filter, options).map((d) => project(d as T, options.projection));
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.updateMatching(filter, update, options.upsert === true, false);
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.updateMatching(filter, update, false, true);
  }

  private async updateMatching(filter: Filter, update: Update, upsert: boolean, multi: boolean): Promise<UpdateResult> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    return this.write(() => this.updateInTxn(filter, update, upsert, multi, this.metaInTxn()));
  }

  async bulkWrite(operations: BulkWriteOperation<T>[]): Promise<BulkWriteResult> {
    // Validated and copied up front: the transaction runs later, and a bad operation fails the call before any write.
    const ops = operations.map((op) => {
      if ("insertOne" in op) return { insert: this.withId(op.insertOne.document) };
      validateUpdate(op.updateOne.update);
      assertDefinedFilter(op.updateOne.filter);
      return { filter: cloneValue(op.updateOne.filter) as Filter, update: cloneValue(op.updateOne.update) as Update, upsert: op.updateOne.upsert === true };
    });
    const result: BulkWriteResult = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedIds: {} };
    if (ops.length === 0) {
      this.store.assertOpen();
      return result;
    }
    await this.write(() => {
      const meta = this.metaInTxn();
      ops.forEach((op, i) => {
        if ("insert" in op) {
          this.putDoc(undefined, op.insert!, meta);
          result.insertedCount++;
          return;
        }
        const r = this.updateInTxn(op.filter, op.update, op.upsert, false, meta);
        result.matchedCount += r.matchedCount;
        result.modifiedCount += r.modifiedCount;
        if (r.upsertedId !== undefined) {
          result.upsertedCount++;
          result.upsertedIds[i] = r.upsertedId;
        }
      });
    });
    return result;
  }

  private updateInTxn(filter: Filter, update: Update, upsert: boolean, multi: boolean, meta: CollectionMeta): UpdateResult {
    const matched = this.select(filter, multi ? {} : { limit: 1 });
    if (matched.length === 0) {
      if (!upsert) return { matchedCount: 0, modifiedCount: 0 };
      return { matchedCount: 0, modifiedCount: 0, upsertedId: this.insertUpsert(filter, update, meta)._id };
    }
    let modifiedCount = 0;
    for (const doc of matched) {
      // Shared: `doc` was just read, and is wanted only for the index entries it had.
      const next = applyUpdate(doc, update, false, { share: true });
      if (deepEqual(doc, next)) continue;
      this.putDoc(doc, next, meta);
      modifiedCount++;
    }
    return { matchedCount: matched.length, modifiedCount };
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    validateUpdate(update);
    assertDefinedFilter(filter);
    const returnBefore = options.returnDocument === "before";
    return this.write(() => {
      const meta = this.metaInTxn();
      const [doc] = this.select(filter, { sort: options.sort, limit: 1 });
      if (!doc) {
        if (!options.upsert) return null;
        const inserted = this.insertUpsert(filter, update, meta);
        return returnBefore ? null : (cloneValue(inserted) as T);
      }
      const next = applyUpdate(doc, update, false, { share: true });
      if (!deepEqual(doc, next)) this.putDoc(doc, cloneValue(next), meta);
      return (returnBefore ? doc : next) as T;
    });
  }

  async deleteOne(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(() => {
      const meta = this.metaInTxn();
      const [doc] = this.select(filter, { limit: 1 });
      if (!doc) return { deletedCount: 0 };
      this.removeDoc(doc, meta);
      return { deletedCount: 1 };
    });
  }

  async deleteMany(filter: Filter): Promise<{ deletedCount: number }> {
    assertDefinedFilter(filter);
    return this.write(() => {
      const meta = this.metaInTxn();
      const docs = this.select(filter);
      for (const doc of docs) this.removeDoc(doc, meta);
      return { deletedCount: docs.length };
    });
  }

  /** Handles on this collection's trees that read segments of _ids from the keys (made on first use). */
  private segmentDbs: { docs: Database<Buffer, string>; index: Database<Buffer, string> } | undefined;

  /**
   * When the filter is exactly one range of keys (no document needs checking), the segments
   * are read from the keys: an index range from equality on its leading fields and at most an
   * inclusive range ($gte / $lte) of numbers or dates on the next (e.g. a kind's engagement
   * totals since a time), or an _id range of the documents tree. Otherwise pages of _ids.
   */
  async *findIdSegments(filter: Filter, segment: IdSegment, options: { batchSize?: number } = {}): AsyncIterable<string[]> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    if (segment.end !== undefined && segment.end.length !== 1) throw new Error("findIdSegments: end must be one character");
    const batchSize = options.batchSize ?? 5_000;
    const meta = this.metaCache;
    const plan = planQuery(filter, undefined, meta.indexes);
    const exact = PRINTABLE.test(segment.prefix) && (segment.end === undefined || PRINTABLE.test(segment.end)) ? this.exactRange(filter, plan, meta) : undefined;
    if (!exact) {
      yield* pagedIdSegments(this as unknown as Collection<Doc>, filter, segment, batchSize);
      return;
    }
    this.segmentDbs ??= {
      docs: this.store.openDb<Database<Buffer, string>>(`d:${this.name}`, { encoding: "binary", keyEncoder: segmentKeys }),
      index: this.store.openDb<Database<Buffer, string>>(`i:${this.name}`, { encoding: "binary", keyEncoder: segmentKeys }),
    };
    const reader: SegmentReader = {
      primary: plan.kind === "primary",
      prefix: Buffer.from(segment.prefix, "latin1"),
      end: segment.end === undefined ? -1 : segment.end.charCodeAt(0),
      segment,
      excluded: exact.excluded.filter((x) => PRINTABLE.test(x)).map((x) => Buffer.from(x, "latin1")),
    };
    const range = plan.ranges![0];
    const db = reader.primary ? this.segmentDbs.docs : this.segmentDbs.index;
    const keys = db.getKeys({ start: range.start, end: range.end } as never)[Symbol.iterator]() as Iterator<string | symbol>;
    try {
      for (;;) {
        const out: string[] = [];
        let done = false;
        while (out.length < batchSize) {
          segmentRead = reader;
          const step = keys.next();
          if (step.done) {
            done = true;
            break;
          }
          if (typeof step.value === "string") out.push(step.value);
        }
        if (out.length) yield out;
        if (done) return;
      }
    } finally {
      keys.return?.();
    }
  }

  /** The plan's one range when it is exactly the filter (see findIdSegments), with the ids exclusive bounds leave out. */
  private exactRange(filter: Filter, plan: Plan, meta: CollectionMeta): { excluded: string[] } | undefined {
    if (plan.ranges?.length !== 1 || plan.idOrder !== undefined || meta.indexes.some((d) => d.ttl !== undefined)) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    if (plan.kind === "primary") {
      // Only _id bounds (strings): the range holds both bounds, so an exclusive bound's own id is left out.
      const c = conds.get("_id");
      if (conds.size !== 1 || !isPlainObject(c)) return undefined;
      const ops = Object.entries(c);
      if (!ops.every(([op, v]) => ["$gt", "$gte", "$lt", "$lte"].includes(op) && typeof v === "string" && v.length <= KEY_STRING_MAX)) return undefined;
      if (ops.filter(([op]) => op.startsWith("$g")).length > 1 || ops.filter(([op]) => op.startsWith("$l")).length > 1) return undefined;
      return { excluded: ops.filter(([op]) => op === "$gt" || op === "$lt").map(([, v]) => v as string) };
    }
    if (plan.kind !== "index") return undefined;
    const def = plan.index!;
    if (def.wildcard !== undefined || def.multikey || def.sparse) return undefined;
    let bound = 0;
    for (const field of partFields(def)) {
      if (!conds.has(field)) break;
      const c = conds.get(field);
      if (wholeInKey(c) || wholeIn(c, "$eq")) {
        bound++;
        continue;
      }
      // The last bound field: an inclusive range of one type (numbers or dates), as the range's bounds hold it.
      if (!isPlainObject(c)) return undefined;
      const values = Object.entries(c);
      const numbers = values.every(([op, v]) => (op === "$gte" || op === "$lte") && typeof v === "number" && wholeInKey(v));
      const dates = values.every(([op, v]) => (op === "$gte" || op === "$lte") && v instanceof Date && wholeInKey(v));
      if (values.length === 0 || !(numbers || dates)) return undefined;
      bound++;
      break;
    }
    return bound === conds.size ? { excluded: [] } : undefined;
  }

  async countDocuments(filter: Filter = {}): Promise<number> {
    this.store.assertOpen();
    assertDefinedFilter(filter);
    const meta = this.metaCache;
    if (Object.keys(filter).length === 0 && !meta.indexes.some((d) => d.ttl !== undefined)) return this.docs.getCount(); // (the structures entry is outside the counted key range)
    const plan = planQuery(filter, undefined, meta.indexes);
    const byIndex = this.countIndexEntries(filter, plan, meta) ?? this.countWildcardEntries(filter, plan, meta) ?? this.countIdEntries(filter, plan, meta);
    if (byIndex !== undefined) return byIndex;
    let n = 0;
    for (const _ of this.candidates(filter, plan, meta)) n++;
    return n;
  }

  /**
   * Counts index entries instead of reading documents when the index range IS the filter:
   * equality on primitive values of a prefix of the index's fields, one range, no arrays
   * indexed, no TTL. Counting a workspace's million contacts then reads only index pages
   * (a tenth of the data), not every document.
   */
  private countIndexEntries(filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
    if (plan.kind !== "index" || plan.ranges!.length !== 1) return undefined;
    const def = plan.index!;
    // A sparse index leaves out documents that lack a later field: they match but have no entry.
    if (def.wildcard !== undefined || def.sparse || meta.indexes.some((d) => d.ttl !== undefined)) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    const keys = [...conds.keys()];
    if (keys.length === 0 || keys.length > def.fields.length) return undefined;
    for (const field of def.fields.slice(0, keys.length)) {
      if (!conds.has(field)) return undefined;
      const v = conds.get(field);
      if (!wholeInKey(v) && !wholeIn(v, "$eq")) return undefined;
    }
    // Several values per document (arrays): only with every key field bound is there one entry per document.
    if (def.multikey && keys.length < partFields(def).length) return undefined;
    let n = 0;
    for (const _ of this.index.getKeys(plan.ranges![0] as never)) n++;
    return n;
  }

  /**
   * Counts the _ids of wildcard index entries without reading documents when the filter is
   * exactly what entries say: a conjunction (top level and $and) of equality on the fields
   * before the wildcard, equality or $in on one path under its root, and equality on other
   * fields that an index ending in _id holds whole (e.g. { workspaceId, status, _id }): each
   * candidate _id is then checked by looking up its entry there, not by reading it.
   */
  private countWildcardEntries(filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
    if (plan.kind !== "index" || plan.idOrder !== undefined || plan.ranges!.length === 0) return undefined;
    if (meta.indexes.some((d) => d.ttl !== undefined)) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    const def = plan.index!;
    const wildcard = def.wildcard !== undefined;
    // Not a wildcard: an index whose key fields all have an equality (one range, one entry
    // per document: e.g. a group's members), other equalities probed as below.
    if (!wildcard && (def.sparse || plan.ranges!.length !== 1 || (def.multikey && !plan.distinct))) return undefined;
    const before = wildcard ? def.fields.slice(0, -1) : partFields(def);
    const eq = new Map<string, unknown>();
    let onPath = !wildcard;
    for (const [key, c] of conds) {
      if (wildcard && key.startsWith(`${def.wildcard}.`)) {
        // The plan's range is this path's (the only one under the root); a key holds the path whole.
        if (onPath || key.length - def.wildcard!.length - 1 > KEY_STRING_MAX) return undefined;
        if (!(wholeInKey(c) || wholeIn(c, "$eq") || wholeIn(c, "$in"))) return undefined;
        onPath = true;
      } else if (key === "_id" || (key.startsWith("$"))) return undefined;
      else if (wholeInKey(c)) eq.set(key, c);
      else if (wholeIn(c, "$eq")) eq.set(key, (c as { $eq: unknown }).$eq);
      else return undefined;
    }
    if (!onPath || !before.every((f) => eq.has(f))) return undefined;
    const extras = [...eq.keys()].filter((k) => !before.includes(k));
    let probe: IndexDef | undefined;
    if (extras.length > 0) {
      // An entry of a single-valued index ending in _id exists iff the document has exactly these values.
      probe = meta.indexes.find(
        (d) => d.wildcard === undefined && d.idTail && !d.multikey && !d.sparse && d.fields.slice(0, -1).every((f) => eq.has(f)) && extras.every((k) => d.fields.includes(k)),
      );
      if (!probe) return undefined;
    }
    const values = probe ? probe.fields.slice(0, -1).map((f) => eq.get(f)) : [];
    let n = 0;
    if (!probe) {
      for (const _ of this.indexIds(plan)) n++;
      return n;
    }
    // The candidates first, then the lookups (no lookup while the range is being read).
    for (const id of [...this.indexIds(plan)]) if (this.index.doesExist(flatKey(probe, [...values, id]))) n++;
    return n;
  }

  /**
   * Counts an "ids" plan (`_id` `$in`) without reading documents when the rest of the filter is
   * equality on fields that a single-valued index ending in _id holds whole (e.g. an audience:
   * { workspaceId, status } and the contact ids a filter resolved to, checked in
   * { workspaceId, status, _id }): each id is one lookup of its entry there, as the wildcard
   * count probes (countWildcardEntries). With no other condition, each id's document is looked
   * up without being decoded.
   */
  private countIdEntries(filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
    if (plan.kind !== "ids" || meta.indexes.some((d) => d.ttl !== undefined)) return undefined;
    const conds = conjunction(filter);
    if (!conds) return undefined;
    const eq = new Map<string, unknown>();
    for (const [key, c] of conds) {
      if (key === "_id") {
        // Exactly the id list (no range besides it, which the plan's slice would only narrow).
        if (!(typeof c === "string" || wholeIn(c, "$in") || wholeIn(c, "$eq"))) return undefined;
      } else if (key.startsWith("$")) return undefined;
      else if (wholeInKey(c)) eq.set(key, c);
      else if (wholeIn(c, "$eq")) eq.set(key, (c as { $eq: unknown }).$eq);
      else return undefined;
    }
    const ids = plan.ids!;
    const [from, to] = plan.idSlice ?? [0, ids.length];
    let n = 0;
    if (eq.size === 0) {
      for (let i = from; i < to; i++) if (this.docs.doesExist(ids[i])) n++;
      return n;
    }
    const probe = meta.indexes.find(
      (d) => d.wildcard === undefined && d.idTail && !d.multikey && !d.sparse && d.fields.length === eq.size + 1 && d.fields.slice(0, -1).every((f) => eq.has(f)),
    );
    if (!probe) return undefined;
    // One key, its last element (the _id) replaced per lookup: the values are encoded once.
    const key = flatKey(probe, [...probe.fields.slice(0, -1).map((f) => eq.get(f)), ""]);
    const last = key.length - 1;
    if (to - from > 1_000 && asciiLists.has(ids)) {
      // A long list: one pass over the entries between its first and last id, merged with it
      // (the index's byte order is the list's order for ASCII ids), instead of a lookup per id.
      const start = [...key];
      start[last] = ids[from];
      const end = [...key];
      end[last] = `${ids[to - 1]}\u0000`;
      let p = from;
      for (const entry of this.index.getKeys({ start, end } as never)) {
        const id = entryId(entry);
        while (p < to && ids[p] < id) p++;
        if (p >= to) break;
        if (ids[p] === id) {
          n++;
          p++;
        }
      }
      return n;
    }
    for (let i = from; i < to; i++) {
      key[last] = ids[i];
      if (this.index.doesExist(key)) n++;
    }
    return n;
  }

  async createIndex(spec: IndexSpec): Promise<void> {
    const fields = Object.keys(spec.keys ?? {});
    if (fields.length === 0) throw new Error("createIndex needs at least one key");
    const wildcards = fields.filter(isWildcardField);
    if (wildcards.length > 0) {
      if (wildcards.length > 1 || !isWildcardField(fields[fields.length - 1]) || fields[fields.length - 1] === "$**") {
        throw new Error('a wildcard index takes one "<field>.$**" key, last');
      }
      if (spec.unique || spec.expireAfterSeconds !== undefined) throw new Error("a wildcard index cannot be unique or TTL");
    }
    if (spec.expireAfterSeconds !== undefined && fields.length !== 1) {
      throw new Error("a TTL index (expireAfterSeconds) takes exactly one field");
    }
    return this.write(() => this.addIndexInTxn(fields, spec));
  }

  /** Builds a new index over the existing documents (inside a write transaction). */
  addIndexInTxn(fields: string[], spec: Omit<IndexSpec, "keys">): void {
    const meta = this.metaInTxn();
    if (meta.indexes.some((d) => d.fields.join("\u0000") === fields.join("\u0000"))) return;
    const def: IndexDef = { no: meta.next, fields, unique: spec.unique === true, sparse: spec.sparse === true };
    if (fields[fields.length - 1] === "_id") def.idTail = true;
    def.compactTags = true;
    if (spec.expireAfterSeconds !== undefined) def.ttl = spec.expireAfterSeconds;
    const last = fields[fields.length - 1];
    if (isWildcardField(last)) {
      def.wildcard = last.slice(0, -".$**".length);
      def.multikey = true; // a document has an entry per value under the root
      def.sparse = false;
      delete def.idTail;
    }
    const now = Date.now();
    try {
      for (const { key, value: doc } of this.docs.getRange({})) {
        if (typeof key === "symbol") continue;
        doc._id = key;
        if (def.unique) this.checkUnique(doc, meta, now, def);
        const tuples = indexTuples(doc, def);
        if (tuples.length > 1 || def.fields.some((f) => valuesAt(doc, f.split(".")).some(Array.isArray))) def.multikey = true;
        for (const tuple of tuples) this.index.putSync(entryKey(def, tuple, doc._id), EMPTY);
      }
    } catch (err) {
      for (const key of [...this.index.getKeys({ start: [ixKey(def.no)], end: [ixKey(def.no + 1)] } as never)]) this.index.removeSync(key);
      throw err;
    }
    meta.indexes.push(def);
    meta.next++;
    this.store.meta.putSync(this.name, meta);
    this.metaCache = meta;
  }

  /** Deletes documents past their TTL (one transaction, at most `max`). */
  async sweepExpired(max = 10_000): Promise<number> {
    if (!this.metaCache.indexes.some((d) => d.ttl !== undefined)) return 0;
    return this.write(() => {
      const meta = this.metaInTxn();
      const now = Date.now();
      let removed = 0;
      for (const def of meta.indexes) {
        if (def.ttl === undefined) continue;
        const keys = [...this.index.getKeys({ start: [ixKey(def.no), tagChar(T_DATE, tagBase(def))], end: [ixKey(def.no), tagChar(T_DATE, tagBase(def)), now - def.ttl * 1000, HIGH], limit: max } as never)];
        for (const key of keys) {
          const doc = this.getDoc(entryId(key));
          if (doc && this.expired(doc, meta, now)) {
            this.removeDoc(doc, meta);
            removed++;
          }
        }
      }
      return removed;
    });
  }

  /** Replaces the collection's content with the documents of an old nedb datafile. */
  clearInTxn(): void {
    for (const key of [...this.index.getKeys({})]) this.index.removeSync(key);
    for (const key of [...this.docs.getKeys({})]) if (typeof key !== "symbol") this.docs.removeSync(key);
    this.store.meta.removeSync(this.name);
    this.metaCache = { next: 1, indexes: [] };
  }

  putRawInTxn(doc: Doc): void {
    this.putValue(doc);
  }

  removeRawInTxn(id: string): void {
    this.docs.removeSync(id);
  }
}

/** errno values of a disk that cannot take a write right now: EIO, EACCES, ENOSPC, EROFS, EDQUOT. */
const UNWRITABLE_DISK = new Set([5, 13, 28, 30, 122, "EIO", "EACCES", "ENOSPC", "EROFS", "EDQUOT"]);

/**
 * A commit the disk refused (full, read-only, I/O error) is an outage the caller may retry
 * (503), not an internal error. lmdb also leaves the cause in a rejected `commitError`
 * promise that would crash the process as an unhandled rejection: it is handled here.
 */
function storageFault(err: unknown): unknown {
  const e = err as { commitError?: Promise<unknown>; code?: unknown } | undefined;
  const commitFailed = typeof e?.commitError?.catch === "function";
  if (commitFailed) e!.commitError!.catch(() => undefined);
  if (!commitFailed && !UNWRITABLE_DISK.has(e?.code as never)) return err;
  return unavailable("service_unavailable", "The store cannot write right now (disk full or unwritable); retry shortly");
}

/**
 * When a commit fails, lmdb rejects internal promises of the batch that no caller holds,
 * besides the one write() catches: without this, a full disk crashes the process as an
 * unhandled rejection instead of answering 503. Only lmdb's commit failures (they carry
 * `commitError`) are swallowed; anything else is rethrown, as Node's default would crash.
 */
let commitFailureGuard = false;
function guardCommitFailures(): void {
  if (commitFailureGuard) return;
  commitFailureGuard = true;
  process.on("unhandledRejection", (reason) => {
    if (reason && typeof reason === "object" && "commitError" in reason) {
      storageFault(reason);
      return;
    }
    // Another listener (a test runner, a service's own) handles the rest; alone, behave as Node would.
    if (process.listenerCount("unhandledRejection") === 1) throw reason;
  });
}

/** A write transaction callback that found its transaction stale (see startedStale): it wrote nothing. */
const STALE = Symbol("stale write transaction");
/** How long a write waits for a stale base to be repaired (see the header) before it answers 503. */
const STALE_WAIT_MS = 10_000;
/** The same for creating a database (openDb), which waits blocking the event loop. */
const STALE_SYNC_WAIT_MS = 1_000;

/**
 * Inside a write transaction: it builds on an older commit than the last one, so committing it
 * would overwrite that commit (see the header). A transaction's id is its base's + 1; a fresh one
 * is above every commit. (env.info() is mdb_env_info, the newest meta page; getStats() would add
 * tree statistics, 100 us inside a write transaction.)
 */
function startedStale(root: RootDatabase): boolean {
  const env = (root as unknown as { env: { info(): { lastTxnId: number } } }).env;
  return root.getWriteTxnId() <= env.info().lastTxnId;
}

function staleUnavailable(): unknown {
  return unavailable("service_unavailable", "The store cannot write right now (another process opening its directory left it to be repaired); retry shortly");
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pauseSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Opens the environment, and opens it again while this opening left the base of the next write
 * transaction stale (see the header): nothing commits while it is stale (store transactions
 * wait), so the next opening reads the last commit and records that.
 */
function openEnv(options: Parameters<typeof open>[0] & object): RootDatabase {
  for (let attempt = 1; ; attempt++) {
    const root = open(options);
    let stale = false;
    root.transactionSync(() => {
      stale = startedStale(root);
      return ABORT;
    });
    if (!stale || attempt === 5) return root;
    void root.close(); // closes at once: nothing was written or read through it
  }
}

export class LmdbStore implements Store {
  readonly kind = "embedded";
  readonly root: RootDatabase;
  readonly meta: Database<unknown, string>;
  private readonly collections = new Map<string, LmdbCollection<Doc>>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  /** Write transaction callbacks of this process running now (reads inside see uncommitted data). */
  writing = 0;

  constructor(readonly dir: string, options: Omit<LmdbStoreOptions, "dir"> = {}) {
    // noReadAhead: random reads bring in the page they need, not its neighbours (smaller RSS).
    // mapSize: address space only (the file grows as needed); reserving plenty up front avoids
    // remapping as the file grows, which would leave the pages of the old mappings resident.
    // (noReadAhead is a supported open option that lmdb's typings lack.)
    this.root = openEnv({
      path: join(dir, LMDB_FILE),
      maxDbs: 4096,
      noReadAhead: true,
      // Commits durable when acknowledged (see the header); overlapping sync lost the last one.
      overlappingSync: false,
      mapSize: options.mapSizeBytes ?? DEFAULT_MAP_SIZE,
    } as Parameters<typeof open>[0] & object);
    this.meta = this.openDb<Database<unknown, string>>("meta", {});
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), options.ttlSweepIntervalMs ?? 60_000);
    this.timer.unref();
  }

  collection<T extends Doc>(name: string): Collection<T> {
    if (!COLLECTION_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    this.assertOpen();
    return this.open(name) as unknown as Collection<T>;
  }

  open(name: string): LmdbCollection<Doc> {
    let collection = this.collections.get(name);
    if (!collection) {
      collection = new LmdbCollection<Doc>(this, name);
      this.collections.set(name, collection);
    }
    return collection;
  }

  assertOpen(): void {
    if (this.closed) throw new Error("store is closed");
  }

  /**
   * Runs fn in an asynchronous write transaction (lmdb puts those queued in one event turn in one
   * commit) and resolves once that committed. In a stale transaction (see the header) fn does not
   * run, and runs in a later one.
   */
  async transact<R>(fn: () => R): Promise<R> {
    const started = Date.now();
    for (;;) {
      const result = await this.root.transaction((): Result<R> | typeof STALE => {
        if (startedStale(this.root)) return STALE;
        this.writing++;
        try {
          return { ok: fn() };
        } catch (err) {
          return { err };
        } finally {
          this.writing--;
        }
      }).catch((err: unknown) => { throw storageFault(err); });
      if (result === STALE) {
        if (Date.now() - started > STALE_WAIT_MS) throw staleUnavailable();
        await pause(2);
        continue;
      }
      if ("err" in result) throw result.err;
      return result.ok;
    }
  }

  /**
   * lmdb's openDB inside a write transaction of ours: creating the database commits, and that
   * commit must not be on a stale base either (see the header).
   */
  openDb<D>(name: string, options: object): D {
    const started = Date.now();
    for (;;) {
      let db: D | undefined;
      this.root.transactionSync(() => {
        if (startedStale(this.root)) return ABORT;
        db = this.root.openDB(name, options as never) as D;
      });
      if (db) return db;
      if (Date.now() - started > STALE_SYNC_WAIT_MS) throw staleUnavailable();
      pauseSync(2);
    }
  }

  /**
   * The collections in this environment, sorted (read-only): each has a `d:<name>` database,
   * listed as a key of the root database. For tools that copy a whole store (`mailroom store copy`).
   */
  collectionNames(): string[] {
    this.assertOpen();
    const names: string[] = [];
    for (const key of this.root.getKeys({})) if (typeof key === "string" && key.startsWith("d:")) names.push(key.slice(2));
    return names.sort();
  }

  /** The id of the environment's last committed transaction (any process's). */
  lastTxnId(): number {
    return (this.root.getStats() as { lastTxnId: number }).lastTxnId;
  }

  async sweep(): Promise<void> {
    for (const collection of this.collections.values()) if (!this.closed) await collection.sweepExpired();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.root.committed;
    await this.root.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Migration from the old nedb datafiles (<dir>/<collection>.db, JSON lines).

type NedbModel = { deserialize(raw: string): Record<string, unknown> };

async function migrateNedbFile(store: LmdbStore, file: string, name: string): Promise<MigrationInfo> {
  const started = Date.now();
  const model = createRequire(import.meta.url)("@seald-io/nedb/lib/model.js") as NedbModel;
  const collection = store.open(name);
  await store.transact(() => collection.clearInTxn());
  const indexes = new Map<string, { fieldName: string | string[]; unique?: boolean; sparse?: boolean; expireAfterSeconds?: number }>();
  let batch: Record<string, unknown>[] = [];
  const flush = async () => {
    const lines = batch;
    batch = [];
    await store.transact(() => {
      for (const doc of lines) {
        if (doc.$$deleted === true) collection.removeRawInTxn(String(doc._id));
        else collection.putRawInTxn(cloneValue(doc) as Doc);
      }
    });
  };
  const reader = createInterface({ input: createReadStream(file, "utf8"), crlfDelay: Infinity });
  for await (const line of reader) {
    if (!line.trim()) continue;
    let doc: Record<string, unknown>;
    try {
      doc = model.deserialize(line);
    } catch {
      continue; // nedb also skips a torn last line
    }
    const created = doc.$$indexCreated as { fieldName?: string | string[] } | undefined;
    if (created && created.fieldName != null) {
      indexes.set(String(created.fieldName), created as { fieldName: string | string[] });
      continue;
    }
    if (typeof doc.$$indexRemoved === "string") {
      indexes.delete(doc.$$indexRemoved);
      continue;
    }
    if (doc._id === undefined) continue;
    batch.push(doc);
    if (batch.length >= 1000) await flush();
  }
  if (batch.length) await flush();
  for (const def of indexes.values()) {
    if (def.fieldName === "_id") continue;
    const fields = Array.isArray(def.fieldName) ? def.fieldName : String(def.fieldName).split(",");
    await store.transact(() => collection.addIndexInTxn(fields, def));
  }
  const movedTo = `${file}.migrated`;
  await store.root.flushed;
  await rename(file, movedTo);
  return { collection: name, documents: await collection.countDocuments(), indexes: indexes.size, from: file, movedTo, ms: Date.now() - started };
}

/** Opens (creating if needed) the LMDB store of a directory, migrating old nedb datafiles once. */
export async function openLmdbStore(options: LmdbStoreOptions): Promise<LmdbStore> {
  guardCommitFailures();
  const store = new LmdbStore(options.dir, options);
  let files: string[] = [];
  try {
    files = (await readdir(options.dir)).filter((f) => f.endsWith(".db") && COLLECTION_NAME.test(f.slice(0, -3)));
  } catch {
    // no directory yet: nothing to migrate
  }
  for (const file of files) {
    const path = join(options.dir, file);
    if (!(await stat(path)).isFile()) continue;
    const info = await migrateNedbFile(store, path, file.slice(0, -3));
    (options.logger ?? { info: (m: string) => console.log(m) }).info(
      `store: migrated collection "${info.collection}" from nedb (${info.documents} documents, ${info.indexes} indexes, ${info.ms} ms); old file kept as ${info.movedTo}`,
    );
    options.onMigrate?.(info);
  }
  return store;
}
