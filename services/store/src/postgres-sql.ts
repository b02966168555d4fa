/**
 * The PostgreSQL adapter's SQL (postgres.ts runs it): how a document is held in `jsonb`, and how
 * the port's filters, sorts, projections and simple updates become parameterised SQL.
 *
 * Documents: the `doc` column holds the document without its `_id` (that is the `_id text`
 * column); a Date is `{"$date": "<ISO-8601 UTC>"}`, turned back into a Date on read. Fixed-width
 * ISO strings order as the dates do, in SQL (btree order of the jsonb objects) and in jsonpath.
 *
 * Filters compile to one WHERE, never to rows fetched and checked in the process:
 * - The exact condition of a field is a jsonpath test, `doc @? '<path> ? (<predicate>)'`: lax
 *   mode walks arrays of sub-documents as MongoDB does ("items.sku" looks into every element)
 *   and a filter looks into an array value one level deep ({tags: "y"} matches ["x", "y"]);
 *   the predicates check the JSON type before comparing, so ranges are type-bracketed (a number
 *   never compares with a string) and a nested array is not unwrapped twice. jsonpath compares
 *   strings by code point, as JavaScript and MongoDB do, whatever the database's collation.
 *   Values are jsonpath literals inside the jsonpath parameter (a GIN jsonb_path_ops index can
 *   answer `@?` only from literals); documents equal to a sub-document or array compare as jsonb.
 * - Where a btree index holds a path, the field also gets an index condition on the index's
 *   expression (`doc -> 'ws' = $1`), which is the field's exact condition in every row holding
 *   no array on that path; the rows holding one (where MongoDB matches through an element) are
 *   found by a partial index of such rows, empty unless the field is multikey, and checked with
 *   the exact condition (FilterCompiler.group). So btree indexes answer filters, sorts and
 *   limits without changing a single answer.
 * Field names (not values) are written into the SQL as quoted literals: an expression index is
 * used only when the query repeats its expression, constants included.
 */
import type { Filter, Sort, Update } from "./port.js";
import { getPath, isPlainObject, setPath, unsetPath } from "./query.js";

type Plain = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// U+0000

/**
 * PostgreSQL's text and jsonb cannot hold U+0000, so every string the server keeps or compares
 * with (values, field names, _ids) is held escaped: U+0000 as U+0001 U+0001, U+0001 as U+0001
 * U+0002. The code is prefix-free and keeps code point order (U+0000 < U+0001 < U+0002, each
 * code sorting where its character did), so equality, ranges, sorts, unique and btree indexes
 * answer on the escaped strings exactly as on the strings; what is read is unescaped. A regular
 * expression would see the escaped form: one naming U+0000 or U+0001 is refused (toPosixRegex).
 */
const NUL_OR_ESCAPE = /[\u0000\u0001]/;

export function escapeNul(s: string): string {
  return NUL_OR_ESCAPE.test(s) ? s.replace(/[\u0000\u0001]/g, (c) => (c === "\u0000" ? "\u0001\u0001" : "\u0001\u0002")) : s;
}

export function unescapeNul(s: string): string {
  return s.includes("\u0001") ? s.replace(/\u0001([\u0001\u0002])/g, (_, c: string) => (c === "\u0001" ? "\u0000" : "\u0001")) : s;
}

/**
 * The same on JSON text, where the two characters are the escapes `\u0000` and `\u0001`
 * (JSON.stringify's, and the server's jsonb output): an escaped backslash (`\\`) is matched as a
 * unit, so `\\u0000` (a backslash, then "u0000") is left alone.
 */
function escapeNulJson(json: string): string {
  return json.includes("\\u000") ? json.replace(/(\\\\)|\\u000([01])/g, (_match, pair: string | undefined, d: string) => pair ?? (d === "0" ? "\\u0001\\u0001" : "\\u0001\\u0002")) : json;
}

function unescapeNulJson(json: string): string {
  return json.includes("\\u0001") ? json.replace(/(\\\\)|\\u0001\\u000([12])/g, (_match, pair: string | undefined, d: string) => pair ?? (d === "1" ? "\\u0000" : "\\u0001")) : json;
}

// ---------------------------------------------------------------------------------------------
// Documents as jsonb

function isoOf(date: Date): string {
  const time = date.getTime();
  if (Number.isNaN(time)) throw new Error("cannot store an invalid Date");
  return date.toISOString();
}

/** JSON for a jsonb parameter: Dates as {"$date": ISO}, `undefined` properties dropped, NaN and Infinity refused, U+0000 escaped. */
export function encodeValue(value: unknown): string {
  return escapeNulJson(JSON.stringify(value, function (this: Plain, key: string, json: unknown) {
    // JSON.stringify has already called Date#toJSON: the holder still has the Date itself.
    const raw = this[key];
    if (raw instanceof Date) return { $date: isoOf(raw) };
    if (typeof json === "number" && !Number.isFinite(json)) throw new Error(`cannot store ${json} (field "${key}")`);
    return json;
  }));
}

/** The `doc` column's value: the document without its _id. */
export function encodeDoc(doc: Plain): string {
  const { _id, ...rest } = doc;
  return encodeValue(rest);
}

function revive(_key: string, value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const date = (value as Plain).$date;
    if (typeof date === "string" && Object.keys(value).length === 1) return new Date(date);
  }
  return value;
}

/** Parses jsonb text from the server (the pool's type parser), Dates revived, U+0000 unescaped. */
export function parseJsonb(text: string): unknown {
  const json = unescapeNulJson(text);
  // Most documents hold no Date at all: skip the reviver's call per value for them.
  return json.includes('"$date"') ? JSON.parse(json, revive) : JSON.parse(json);
}

// ---------------------------------------------------------------------------------------------
// SQL pieces

export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** A string literal for SQL text: only for field names (structure), never for values. */
function sqlString(s: string): string {
  return `'${escapeNul(s).replace(/'/g, "''")}'`;
}

/** Bound parameters of one statement: add() returns the placeholder. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return `$${this.values.length}${cast ? `::${cast}` : ""}`;
  }
}

const NUMERIC = /^\d+$/;

export function splitPath(path: string): string[] {
  const segments = path.split(".");
  if (path === "" || segments.some((s) => s === "")) throw new Error(`invalid field path "${path}"`);
  return segments;
}

/**
 * The SQL expression of a field: `doc -> 'a' -> 'b'` (the form expression indexes are built on),
 * or `doc #> ARRAY[…]` when a segment is a number (an array position as well as a key there).
 */
export function fieldExpr(path: string): string {
  if (path === "_id") return "_id";
  const segments = splitPath(path);
  if (segments.some((s) => NUMERIC.test(s))) return `(doc #> ARRAY[${segments.map(sqlString).join(", ")}]::text[])`;
  return `(doc${segments.map((s) => ` -> ${sqlString(s)}`).join("")})`;
}

// ---------------------------------------------------------------------------------------------
// jsonpath

const jsonpathKey = (segment: string) => `.${JSON.stringify(escapeNul(segment))}`;

/**
 * The jsonpath walks that reach a field's values. A numeric segment names an array position and
 * an object key alike (MongoDB reads both), so it yields two walks; the position only where the
 * value is an array (lax mode would read any other value as a one-element array).
 */
function pathVariants(segments: string[]): string[] {
  let variants = ["$"];
  for (let i = 0; i < segments.length; i++) {
    const key = jsonpathKey(segments[i]);
    if (i === 0 || !NUMERIC.test(segments[i]) || segments[i].length > 9) {
      variants = variants.map((v) => v + key);
      continue;
    }
    const position = `[${Number(segments[i])}]`;
    const parent = jsonpathKey(segments[i - 1]);
    variants = variants.flatMap((v) => {
      const indexed = v.endsWith(parent)
        ? `${v.slice(0, -parent.length)} ? (@${parent}.type() == "array")${parent}${position}`
        : v + position;
      return [v + key, indexed];
    });
  }
  return variants;
}

function literal(value: string | number | boolean): string {
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error(`cannot compare with ${value}`);
  return typeof value === "string" ? JSON.stringify(escapeNul(value)) : String(value);
}

/** jsonpath predicate (on `@`) "equals this scalar, Date or regular expression", else undefined. */
function scalarPredicate(value: unknown): string | undefined {
  if (value instanceof Date) return `@.type() == "object" && @."$date" == ${JSON.stringify(isoOf(value))}`;
  if (value instanceof RegExp) return regexPredicate(value.source, value.flags);
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
    return `@.type() == "${typeof value}" && @ == ${literal(value)}`;
  }
  return undefined;
}

/**
 * A JavaScript regular expression as a POSIX one (PostgreSQL's ARE, which jsonpath's
 * like_regex uses): the same for the common syntax; word boundaries are \y there, \xHH is
 * \u00HH; what ARE cannot mean the same (named groups, inline flags, \p{…}) is refused.
 */
export function toPosixRegex(source: string): string {
  let out = "";
  let inClass = false;
  const refuse = (what: string): never => {
    throw new Error(`unsupported in $regex on PostgreSQL: ${what} in /${source}/`);
  };
  // Held escaped (escapeNul): a pattern naming either would not match what the store holds.
  if (NUL_OR_ESCAPE.test(source) || /\\(x0[01]|u000[01]|0|c[@aA])/.test(source)) refuse("U+0000 or U+0001");
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === "\\") {
      const n = source[++i];
      if (n === undefined) refuse("a trailing backslash");
      if (!inClass && n === "b") out += "\\y";
      else if (!inClass && n === "B") out += "\\Y";
      else if (n === "x") {
        const hex = source.slice(i + 1, i + 3);
        if (!/^[0-9a-fA-F]{2}$/.test(hex)) refuse("\\x without two hex digits");
        out += `\\u00${hex}`;
        i += 2;
      } else if (n === "u") {
        const hex = source.slice(i + 1, i + 5);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) refuse("\\u{…} or a short \\u escape");
        out += `\\u${hex}`;
        i += 4;
      } else if (n === "p" || n === "P" || n === "k") refuse(`\\${n}`);
      else if (inClass && (n === "D" || n === "S" || n === "W")) refuse(`\\${n} inside [...]`);
      else out += `\\${n}`;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      if (source[i + 1] === "^") out += source[++i];
      if (source[i + 1] === "]") refuse("[] or [^]");
      continue;
    }
    if (c === "(" && source[i + 1] === "?") {
      const kind = source.slice(i + 2, i + 4);
      if (!(kind[0] === ":" || kind[0] === "=" || kind[0] === "!" || kind === "<=" || kind === "<!")) refuse("named groups and inline flags");
    }
    out += c;
  }
  return out;
}

function regexFlags(flags: string): string {
  // i, m, s, x mean the same in like_regex; g, y, u and d change nothing about a match.
  let out = "";
  for (const f of flags) {
    if ("imsx".includes(f)) out += f;
    else if (!"gyud".includes(f)) throw new Error(`unsupported $regex option "${f}"`);
  }
  return out;
}

function regexPredicate(source: string, flags: string): string {
  const f = regexFlags(flags);
  return `@.type() == "string" && @ like_regex ${JSON.stringify(toPosixRegex(source))}${f ? ` flag ${JSON.stringify(f)}` : ""}`;
}

// ---------------------------------------------------------------------------------------------
// Filters

export interface FilterContext {
  /** Paths that key a btree index (not _id): the WHERE adds conditions those indexes answer. */
  indexed: ReadonlySet<string>;
  /** The database collation orders strings by code point (C, POSIX): string ranges may use btree indexes too. */
  bytewiseStrings: boolean;
}

export interface CompiledFilter {
  /** The filter as a SQL condition on a table of (_id, doc). */
  where: string;
  /**
   * With index conditions at the top level (see FilterCompiler.group), `where` is `plain OR
   * arrays`: a sorted find may run the two apart, so the plain side can walk a btree index in
   * the sort's order and stop at the limit (a BitmapOr cannot).
   */
  split?: { plain: string; arrays: string };
}

export function compileFilter(filter: Filter, params: Params, ctx: FilterContext): CompiledFilter {
  const compiler = new FilterCompiler(params, ctx);
  const where = compiler.group(filter, true, true);
  return { where, ...(compiler.split ? { split: compiler.split } : {}) };
}

/** An index condition on a field: in a row holding no array on the field's path, it is the field's condition itself. */
interface Hint {
  segments: string[];
  sql: string;
}

/** A compiled condition, and whether index conditions stand for it whole in rows without arrays on its path. */
interface Part {
  sql: string;
  covered: boolean;
}

const RANGE_SQL: Record<string, string> = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" };
/** $in lists longer than this compare in SQL (= ANY) rather than as one jsonpath alternation each. */
const JSONPATH_LIST_MAX = 32;
/**
 * The jsonb values of one JSON type lie in [low, high) (btree order: null < strings < numbers
 * < booleans < arrays < objects; a Date is {"$date": string}, below {"$date": <number>}).
 * No JavaScript number is as low as -1e400.
 */
const BAND = {
  string: ["'\"\"'::jsonb", "'-1e400'::jsonb"],
  number: ["'-1e400'::jsonb", "'false'::jsonb"],
  date: ["'{\"$date\": \"\"}'::jsonb", "'{\"$date\": 0}'::jsonb"],
} as const;

function isOperatorObject(value: unknown): value is Plain {
  if (!isPlainObject(value)) return false;
  const first = Object.keys(value)[0];
  return first !== undefined && first.startsWith("$");
}

function filtersOf(op: string, arg: unknown): Filter[] {
  if (!Array.isArray(arg) || arg.length === 0 || !arg.every(isPlainObject)) throw new Error(`${op} needs a non-empty array of filters`);
  return arg as Filter[];
}

function listOf(op: string, arg: unknown): unknown[] {
  if (!Array.isArray(arg)) throw new Error(`${op} needs an array`);
  return arg;
}

const paren = (parts: string[], joiner: string, empty: string) =>
  parts.length === 0 ? empty : parts.length === 1 ? parts[0] : `(${parts.join(joiner)})`;

class FilterCompiler {
  split?: CompiledFilter["split"];

  constructor(private readonly p: Params, private readonly ctx: FilterContext) {}

  /**
   * One filter object: its conditions ANDed ($and's flattened in, so one index's conditions
   * cover them together). Where a btree index holds a field, the field also gets an index
   * condition (Hint). The group is then `rest AND (plain OR arrays)`:
   * - plain: the index conditions, in rows holding no array on their paths (or prefixes). Such
   *   a row holds one value per path, and the conditions are exactly the fields' conditions.
   * - arrays: rows holding an array there (where MongoDB matches through an element), found by
   *   the partial index of each path's array rows (postgres.ts creates them), with the exact
   *   conditions.
   * - rest: the conditions no index condition stands for.
   * PostgreSQL answers `plain OR arrays` with a BitmapOr of the btree and the partial indexes,
   * estimating the rows from the btree's statistics.
   */
  group(filter: Filter, hinted: boolean, top = false): string {
    if (!isPlainObject(filter)) throw new Error("filter must be an object");
    const parts: Part[] = [];
    const hints: Hint[] = [];
    const visit = (f: Filter) => {
      for (const [key, condition] of Object.entries(f)) {
        if (key === "$and") filtersOf(key, condition).forEach(visit);
        else if (key === "$or") parts.push({ sql: paren(filtersOf(key, condition).map((g) => this.group(g, hinted)), " OR ", "FALSE"), covered: false });
        else if (key === "$nor") parts.push({ sql: `NOT ${paren(filtersOf(key, condition).map((g) => this.group(g, false)), " OR ", "FALSE")}`, covered: false });
        else if (key.startsWith("$")) throw new Error(`unsupported query operator ${key}`);
        else if (key === "_id") parts.push({ sql: this.id(condition), covered: false });
        else parts.push(this.field(key, condition, hinted ? hints : undefined));
      }
    };
    visit(filter);
    if (hints.length === 0) return paren(parts.map((p) => p.sql), " AND ", "TRUE");

    const prefixes = new Set<string>();
    for (const { segments } of hints) {
      for (let i = 1; i <= segments.length; i++) prefixes.add(segments.slice(0, i).join("."));
    }
    const rest = parts.filter((p) => !p.covered).map((p) => p.sql);
    const covered = parts.filter((p) => p.covered).map((p) => p.sql);
    const plain = paren([
      ...hints.map((h) => h.sql),
      ...[...prefixes].map((path) => `jsonb_typeof(${fieldExpr(path)}) IS DISTINCT FROM 'array'`),
    ], " AND ", "TRUE");
    const arrays = paren([`(${[...prefixes].map(arrayAt).join(" OR ")})`, ...covered], " AND ", "TRUE");
    if (top) this.split = { plain: paren([...rest, plain], " AND ", "TRUE"), arrays: paren([...rest, arrays], " AND ", "TRUE") };
    return paren([...rest, `(${plain} OR ${arrays})`], " AND ", "TRUE");
  }

  // -- _id: the primary key column (text, "C" collation: code point order, as JavaScript).

  private id(condition: unknown): string {
    if (!isOperatorObject(condition)) return this.idEquals(condition);
    const parts: string[] = [];
    for (const [op, arg] of Object.entries(condition)) {
      switch (op) {
        case "$eq": parts.push(this.idEquals(arg)); break;
        case "$ne": parts.push(`NOT ${this.idEquals(arg)}`); break;
        case "$in": parts.push(this.idIn(listOf(op, arg))); break;
        case "$nin": parts.push(`NOT ${this.idIn(listOf(op, arg))}`); break;
        case "$gt": case "$gte": case "$lt": case "$lte":
          parts.push(typeof arg === "string" ? `_id ${RANGE_SQL[op]} ${this.p.add(escapeNul(arg))}` : "FALSE");
          break;
        case "$exists": parts.push(arg ? "TRUE" : "FALSE"); break;
        case "$regex": parts.push(this.idRegex(arg instanceof RegExp ? arg.source : String(arg), typeof condition.$options === "string" ? condition.$options : arg instanceof RegExp ? arg.flags : "")); break;
        case "$options": if (!("$regex" in condition)) throw new Error("$options without $regex"); break;
        default: throw new Error(`unsupported query operator ${op}`);
      }
    }
    return paren(parts, " AND ", "TRUE");
  }

  private idEquals(value: unknown): string {
    if (typeof value === "string") return `_id = ${this.p.add(escapeNul(value))}`;
    if (value instanceof RegExp) return this.idRegex(value.source, value.flags);
    return "FALSE"; // every _id is a string
  }

  private idIn(list: unknown[]): string {
    const ids = list.filter((v): v is string => typeof v === "string").map(escapeNul);
    const parts = list.filter((v): v is RegExp => v instanceof RegExp).map((re) => this.idRegex(re.source, re.flags));
    if (ids.length) parts.unshift(`_id = ANY(${this.p.add(ids, "text[]")})`);
    return paren(parts, " OR ", "FALSE");
  }

  private idRegex(source: string, flags: string): string {
    const f = regexFlags(flags);
    return `_id ${f.includes("i") ? "~*" : "~"} ${this.p.add(toPosixRegex(source))}`;
  }

  // -- Other fields: jsonpath on doc.

  private field(path: string, condition: unknown, hints: Hint[] | undefined): Part {
    const segments = splitPath(path);
    // Index conditions only where the expression is an index's: a btree key, no numeric segment.
    const expr = hints && this.ctx.indexed.has(path) && !segments.some((s) => NUMERIC.test(s)) ? fieldExpr(path) : undefined;
    const ops: [string, unknown][] = isOperatorObject(condition) ? Object.entries(condition) : [["$eq", condition]];
    const parts: string[] = [];
    let covered = expr !== undefined;
    for (const [op, arg] of ops) {
      let hint: string | undefined;
      switch (op) {
        case "$eq":
          parts.push(this.equals(segments, arg));
          hint = expr && this.hintEquals(expr, arg);
          break;
        case "$ne": parts.push(`NOT ${this.equals(segments, arg)}`); break;
        case "$in":
          parts.push(this.in(segments, listOf(op, arg)));
          hint = expr && this.hintIn(expr, listOf(op, arg));
          break;
        case "$nin": parts.push(`NOT ${this.in(segments, listOf(op, arg))}`); break;
        case "$gt": case "$gte": case "$lt": case "$lte":
          parts.push(this.range(segments, op, arg));
          hint = expr && this.hintRange(expr, op, arg);
          break;
        case "$exists": parts.push(arg ? this.exists(segments) : `NOT ${this.exists(segments)}`); break;
        case "$regex": {
          const options = typeof (condition as Plain).$options === "string" ? (condition as Plain).$options as string : arg instanceof RegExp ? arg.flags : "";
          parts.push(this.test(segments, regexPredicate(arg instanceof RegExp ? arg.source : String(arg), options)));
          break;
        }
        case "$options":
          if (!("$regex" in (condition as Plain))) throw new Error("$options without $regex");
          continue;
        default: throw new Error(`unsupported query operator ${op}`);
      }
      if (hint) hints!.push({ segments, sql: hint });
      else covered = false;
    }
    return { sql: paren(parts, " AND ", "TRUE"), covered };
  }

  /** Some value at the path (an array value: some element of it) satisfies the jsonpath predicate. */
  private test(segments: string[], predicate: string): string {
    return paren(pathVariants(segments).map((v) => `doc @? ${this.p.add(`${v} ? (${predicate})`, "jsonpath")}`), " OR ", "FALSE");
  }

  private exists(segments: string[]): string {
    return paren(pathVariants(segments).map((v) => `doc @? ${this.p.add(v, "jsonpath")}`), " OR ", "FALSE");
  }

  /** MongoDB's null: the field is null (or an array holding null), or some walk of the path finds nothing. */
  private isNull(segments: string[]): string {
    return `(${this.endsEarly(segments)} OR ${this.test(segments, '@.type() == "null"')})`;
  }

  /**
   * Some walk of the path stops before its end (query.ts's valuesAt yields undefined there): on
   * the way, a sub-document (or an array's sub-document) lacks the next key, or the value is
   * null, a scalar or a Date, or an array holding no sub-document. (`.type()` reads a value
   * without lax mode's unwrapping of arrays.) With a numeric segment, only a missing path counts.
   */
  private endsEarly(segments: string[]): string {
    if (segments.some((s) => NUMERIC.test(s))) return `NOT ${this.exists(segments)}`;
    const walk = (n: number) => `$${segments.slice(0, n).map(jsonpathKey).join("")}`;
    const subDocument = (v: string) => `(${v}.type() == "object" && !(exists(${v}."$date")))`;
    const terms: string[] = [];
    for (let k = 0; k < segments.length; k++) {
      terms.push(`exists(${walk(k)} ? (${subDocument("@")} && !(exists(@${jsonpathKey(segments[k])}))))`);
      if (k === 0) continue;
      const here = `@${jsonpathKey(segments[k - 1])}`;
      terms.push(`exists(${walk(k - 1)} ? (${here}.type() != "array" && !${subDocument(here)}))`);
      terms.push(`exists(${walk(k - 1)} ? (${here}.type() == "array" && !(exists(${here}[*] ? ${subDocument("@")}))))`);
    }
    return `doc @? ${this.p.add(`$ ? (${terms.join(" || ")})`, "jsonpath")}`;
  }

  private equals(segments: string[], value: unknown): string {
    if (value === null) return this.isNull(segments);
    const predicate = scalarPredicate(value);
    if (predicate) return this.test(segments, predicate);
    if (Array.isArray(value) || isPlainObject(value)) return this.equalsWhole(segments, value);
    throw new Error(`cannot compare with a value of type ${typeof value}`);
  }

  /** A sub-document or array: compared whole as jsonb, with the value itself or with an element of an array value. */
  private equalsWhole(segments: string[], value: unknown): string {
    const v = this.p.add(encodeValue(value), "jsonb");
    return paren(pathVariants(segments).map((path) =>
      `EXISTS (SELECT 1 FROM jsonb_path_query(doc, ${this.p.add(path, "jsonpath")}) AS x(v) ` +
      `WHERE x.v = ${v} OR (jsonb_typeof(x.v) = 'array' AND ${v} IN (SELECT jsonb_array_elements(x.v))))`), " OR ", "FALSE");
  }

  private in(segments: string[], list: unknown[]): string {
    const parts: string[] = [];
    const scalars: unknown[] = [];
    let withNull = false;
    for (const value of list) {
      if (value === null) withNull = true;
      else if (value instanceof RegExp) parts.push(this.test(segments, regexPredicate(value.source, value.flags)));
      else if (value instanceof Date || ["string", "number", "boolean"].includes(typeof value)) scalars.push(value);
      else if (Array.isArray(value) || isPlainObject(value)) parts.push(this.equalsWhole(segments, value));
      else throw new Error(`cannot compare with a value of type ${typeof value}`);
    }
    if (scalars.length > JSONPATH_LIST_MAX) {
      // A long list (ids, say) as one array parameter: the path's non-array values (the elements of an array value) against it.
      const values = pathVariants(segments)
        .map((v) => `SELECT jsonb_path_query(doc, ${this.p.add(`${v} ? (@.type() != "array")`, "jsonpath")})`)
        .join(" UNION ALL ");
      parts.unshift(`EXISTS (SELECT 1 FROM (${values}) AS x(v) WHERE x.v = ANY(${this.p.add(scalars.map(encodeValue), "jsonb[]")}))`);
    } else if (scalars.length) {
      parts.unshift(this.test(segments, scalars.map((v) => `(${scalarPredicate(v)})`).join(" || ")));
    }
    if (withNull) parts.push(this.isNull(segments));
    return paren(parts, " OR ", "FALSE");
  }

  /** Type-bracketed like MongoDB: a number compares with numbers only, a Date with Dates. */
  private range(segments: string[], op: string, value: unknown): string {
    const cmp = RANGE_SQL[op];
    if (value === null) return op === "$gte" || op === "$lte" ? this.isNull(segments) : "FALSE";
    if (value instanceof Date) return this.test(segments, `@.type() == "object" && @."$date" ${cmp} ${JSON.stringify(isoOf(value))}`);
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      return this.test(segments, `@.type() == "${typeof value}" && @ ${cmp} ${literal(value)}`);
    }
    return "FALSE"; // MongoDB compares no other type in a range here
  }

  // -- Index conditions: each is its field's condition in a row holding one value on the path.

  private hintEquals(expr: string, value: unknown): string | undefined {
    return hintable(value) ? `${expr} = ${this.p.add(encodeValue(value), "jsonb")}` : undefined;
  }

  private hintIn(expr: string, list: unknown[]): string | undefined {
    return list.length && list.every(hintable) ? `${expr} = ANY(${this.p.add(list.map(encodeValue), "jsonb[]")})` : undefined;
  }

  /** Within the band of the value's type: jsonb orders numbers, and our Dates, as they compare; strings by the collation (code points only under C). */
  private hintRange(expr: string, op: string, value: unknown): string | undefined {
    const band = typeof value === "number" && Number.isFinite(value) ? BAND.number
      : value instanceof Date ? BAND.date
      : typeof value === "string" && this.ctx.bytewiseStrings ? BAND.string
      : undefined;
    if (!band) return undefined;
    return `${expr} ${RANGE_SQL[op]} ${this.p.add(encodeValue(value), "jsonb")} AND ${expr} >= ${band[0]} AND ${expr} < ${band[1]}`;
  }
}

/** Values an index condition can stand for: scalars and Dates (null, regular expressions and sub-documents cannot). */
const hintable = (value: unknown): boolean =>
  value instanceof Date || typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));

/** The condition of the partial index of rows holding an array at `path`. */
export function arrayAt(path: string): string {
  return `jsonb_typeof(${fieldExpr(path)}) = 'array'`;
}

// ---------------------------------------------------------------------------------------------
// Sorts and projections

/**
 * ORDER BY: _id in code point order; other fields in jsonb order (null, strings, numbers,
 * booleans, arrays, objects — Dates among the objects, in date order), a missing field first
 * ascending as MongoDB puts it. Strings order by the database collation.
 */
export function compileSort(sort: Sort | undefined): string {
  const keys = Object.entries(sort ?? {});
  if (keys.length === 0) return "";
  return `ORDER BY ${keys.map(([path, dir]) => {
    if (dir !== 1 && dir !== -1) throw new Error(`sort direction of "${path}" must be 1 or -1`);
    if (path === "_id") return dir === 1 ? "_id ASC" : "_id DESC";
    return `${fieldExpr(path)} ${dir === 1 ? "ASC NULLS FIRST" : "DESC NULLS LAST"}`;
  }).join(", ")}`;
}

export interface ProjectionPlan {
  /** The SELECT expression for the doc column. */
  docExpr: string;
  /** Leave _id out of the result. */
  dropId: boolean;
  /** Projects in the process instead (dotted paths): applied to the whole document. */
  apply?: (doc: Plain) => Plain;
}

/**
 * A projection of top-level fields runs in SQL (only what is asked crosses the wire); one with
 * dotted paths is applied to each document read (as the embedded store does).
 */
export function compileProjection(projection: Record<string, 0 | 1> | undefined, params: Params): ProjectionPlan {
  const entries = Object.entries(projection ?? {});
  if (entries.length === 0) return { docExpr: "doc", dropId: false };
  const including = entries.some(([k, v]) => k !== "_id" && v) || (entries.length === 1 && projection!._id === 1);
  const dropId = projection!._id === 0;
  const fields = entries.filter(([k, v]) => k !== "_id" && (including ? v : !v)).map(([k]) => k);
  if (fields.some((f) => f.includes("."))) return { docExpr: "doc", dropId: false, apply: (doc) => projectInProcess(doc, projection!, including) };
  if (!including) return { docExpr: fields.length ? `(doc - ${params.add(fields.map(escapeNul), "text[]")})` : "doc", dropId };
  if (fields.length === 0) return { docExpr: "'{}'::jsonb", dropId };
  return {
    docExpr: `(SELECT coalesce(jsonb_object_agg(f.key, f.value), '{}'::jsonb) FROM jsonb_each(doc) AS f WHERE f.key = ANY(${params.add(fields.map(escapeNul), "text[]")}))`,
    dropId,
  };
}

function projectInProcess(doc: Plain, projection: Record<string, 0 | 1>, including: boolean): Plain {
  if (!including) {
    for (const [path, v] of Object.entries(projection)) if (!v) unsetPath(doc, path);
    return doc;
  }
  const out: Plain = {};
  if (projection._id !== 0) out._id = doc._id;
  for (const [path, v] of Object.entries(projection)) {
    if (!v || path === "_id") continue;
    const value = getPath(doc, path);
    if (value !== undefined) setPath(out, path, value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Updates in SQL

/**
 * The new `doc` as one SQL expression over `docRef`, for the updates that are plain jsonb edits:
 * $set, $unset and $inc of top-level fields ($setOnInsert applies only to an upsert's insert,
 * done elsewhere). Undefined for anything else ($push, $addToSet, $pull, dotted paths, _id):
 * those read the row under a lock and apply query.ts's applier. `inc` is the schema's function
 * that refuses a non-number (postgres.ts's migration).
 */
export function compileUpdate(update: Update, docRef: string, params: Params, inc: string): string | undefined {
  const defined = (operand: Record<string, unknown> | undefined) => Object.entries(operand ?? {}).filter(([, v]) => v !== undefined);
  for (const op of Object.keys(update)) if (!["$set", "$unset", "$inc", "$setOnInsert"].includes(op)) return undefined;
  const set = defined(update.$set);
  const unset = defined(update.$unset).map(([k]) => k);
  const incs = defined(update.$inc) as [string, number][];
  if ([...set.map(([k]) => k), ...unset, ...incs.map(([k]) => k)].some((k) => k.includes(".") || k === "_id" || k === "")) return undefined;
  let expr = docRef;
  if (unset.length) expr = `(${expr} - ${params.add(unset.map(escapeNul), "text[]")})`;
  if (set.length) expr = `(${expr} || ${params.add(encodeValue(Object.fromEntries(set)), "jsonb")})`;
  if (incs.length) {
    const pairs = incs.map(([k, n]) => {
      const key = params.add(escapeNul(k), "text");
      return `${key}, ${inc}(${docRef} -> ${key}, ${params.add(n, "float8")})`;
    });
    expr = `(${expr} || jsonb_build_object(${pairs.join(", ")}))`;
  }
  return expr;
}
