/**
 * Index entries of the LMDB store: definitions, type-tagged key encoding (MongoDB's order of
 * types), the values a document holds per index (arrays, dotted paths, wildcard paths) and
 * what a key holds whole.
 */
import type { Doc, Filter } from "../port.js";
import { deepEqual, isPlainObject, setPath, valuesAt } from "../query.js";

/** Longest string (in chars) kept in an index key; longer ones are cut (the index stays a superset). */
export const KEY_STRING_MAX = 200;
/** Greater than every _id we store: closes a range "after every entry with this prefix". */
export const HIGH = "\uffff\uffff";
export const EMPTY = Buffer.alloc(0);

// ---------------------------------------------------------------------------------------------
// Index keys (ordered-binary arrays): [index, ...parts of each field value, _id]. A value's part
// starts with a one-character type tag following MongoDB's sort order of types (missing/null <
// numbers < strings < objects < arrays < binary < booleans < dates); strings are stored as tag +
// text in one element, numbers and dates as [tag, number]. Compact keys keep the index small.

export const T_NULL = 1, T_NUM = 2, T_STR = 3, T_OBJ = 4, T_ARR = 5, T_BIN = 6, T_BOOL = 7, T_DATE = 8, T_OTHER = 9;
type Part = (string | number)[];
/**
 * The tag's character. First-layout indexes use 0x01..0x09; ordered-binary escapes a string
 * starting below 0x1c with two extra bytes, so indexes created since (IndexDef.compactTags)
 * use 0x1c..0x24: same order, two bytes less per value.
 */
export const tagChar = (tag: number, base: number) => String.fromCharCode(base + tag);
const COMPACT_TAGS = 0x1b;
export const tagBase = (def: IndexDef) => (def.compactTags ? COMPACT_TAGS : 0);
/** First element of every entry of index `no`. */
export const ixKey = (no: number) => String.fromCharCode(0x20 + no);

export function typeTag(v: unknown): number {
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

export function keyPart(v: unknown, base: number): Part {
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
export function wholeInKey(v: unknown): boolean {
  if (typeof v === "string") return v.length <= KEY_STRING_MAX;
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0);
  if (v instanceof Date) return Number.isFinite(v.getTime());
  return typeof v === "boolean";
}

/** `{ [op]: value }` alone, with a value ($in: every value) an index key holds whole. */
export function wholeIn(c: unknown, op: "$eq" | "$in"): boolean {
  if (!isPlainObject(c)) return false;
  const ops = Object.keys(c);
  if (ops.length !== 1 || ops[0] !== op) return false;
  return op === "$eq" ? wholeInKey(c.$eq) : Array.isArray(c.$in) && listFacts(c.$in).wholeInKey;
}

/** A filter's field conditions when it is a plain conjunction (top level and $and), each field once; else undefined. */
export function conjunction(filter: Filter, out = new Map<string, unknown>()): Map<string, unknown> | undefined {
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
export function indexable(v: unknown): boolean {
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
export const isWildcardField = (field: string) => field === "$**" || field.endsWith(".$**");

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

export interface CollectionMeta {
  next: number;
  indexes: IndexDef[];
}

/** One index's entries for a document's tuples, by a text form of each entry's key. */
export function entryKeysOf(def: IndexDef, tuples: unknown[][], id: string): Map<string, (string | number)[]> {
  const keys = new Map<string, (string | number)[]>();
  for (const tuple of tuples) {
    const key = entryKey(def, tuple, id);
    keys.set(JSON.stringify(key), key);
  }
  return keys;
}

/** The same index values, of the same types (an entry's key tells `1` from `"1"`, null from missing). */
export function sameTuples(a: unknown[][], b: unknown[][]): boolean {
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
export function indexTuples(doc: Record<string, unknown>, def: IndexDef): unknown[][] {
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
export const partFields = (def: IndexDef): string[] => (def.idTail ? def.fields.slice(0, -1) : def.fields);

/** Key of the entries for these values (in an idTail index, the last value is the _id: complete). */
export const flatKey = (def: IndexDef, tuple: unknown[]): (string | number)[] => {
  const key: (string | number)[] = [ixKey(def.no)];
  const parts = def.idTail ? tuple.length - 1 : tuple.length;
  const base = tagBase(def);
  for (let i = 0; i < parts; i++) for (const part of keyPart(tuple[i], base)) key.push(part);
  if (def.idTail) key.push(tuple[parts] as string);
  return key;
};

/** The stored key of an entry: the values, then the _id (raw, so it can be read back). */
export const entryKey = (def: IndexDef, tuple: unknown[], id: string): (string | number)[] => {
  const key = flatKey(def, tuple);
  if (!def.idTail) key.push(id);
  return key;
};

/**
 * The document an index entry describes (its key fields and _id), when the key holds every
 * value whole: undefined for a string that may have been cut, null or a missing field (the key
 * does not tell them apart), NaN, objects, arrays and other types.
 */
export function decodeEntry(key: (string | number)[], fields: string[], base: number): Doc | undefined {
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
export const entryId = (key: unknown): string => (key as string[])[(key as string[]).length - 1];

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

export function listFacts(list: unknown[]): ListFacts {
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

const ASCII = /^[\x20-\x7e]*$/;
