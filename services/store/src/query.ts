/**
 * MongoDB query and update semantics for the operators the store port promises, evaluated
 * in process. The embedded adapter uses these instead of nedb's own matcher because nedb
 * differs from MongoDB where repositories care: `{f: null}` does not match a missing field,
 * `$ne`/`$nin` on arrays match if any element differs, `$eq` and `$setOnInsert` do not exist.
 */
import { randomBytes } from "node:crypto";
import type { Filter, Update } from "./port.js";

type Plain = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Plain {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Deep copy that keeps Dates and drops `undefined` properties (as MongoDB with ignoreUndefined). */
export function cloneValue<V>(value: V): V {
  if (value instanceof Date) return new Date(value.getTime()) as V;
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : cloneValue(item))) as V;
  if (isPlainObject(value)) {
    const out: Plain = {};
    // for…in, not Object.entries: a plain object has no enumerable inherited keys, and the
    // pairs entries() allocates were a fifth of an insert's garbage.
    for (const key in value) {
      const item = value[key];
      if (item !== undefined) out[key] = cloneValue(item);
    }
    return out as V;
  }
  return value;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    // Keys holding undefined count as absent on both sides.
    let defined = 0;
    for (const key in a) {
      if (a[key] === undefined) continue;
      defined++;
      if (!deepEqual(a[key], b[key])) return false;
    }
    for (const key in b) if (b[key] !== undefined) defined--;
    return defined === 0;
  }
  return false;
}

/** A 24-hex-char id for upserted documents whose filter names no _id (MongoDB would make an ObjectId). */
export function newStoreId(): string {
  return randomBytes(12).toString("hex");
}

// ---------------------------------------------------------------------------------------------
// Filters

const isIndex = (segment: string) => /^\d+$/.test(segment);

/**
 * Values reachable at a dotted path, walking through arrays of sub-documents like MongoDB
 * does ("items.sku" looks inside every element of `items`). `undefined` stands for "missing".
 */
export function valuesAt(value: unknown, segments: string[]): unknown[] {
  if (segments.length === 0) return [value];
  if (value === undefined || value === null) return [undefined];
  const [head, ...rest] = segments;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    if (isIndex(head) && Number(head) < value.length) out.push(...valuesAt(value[Number(head)], rest));
    for (const item of value) if (isPlainObject(item)) out.push(...valuesAt(item, segments));
    return out.length > 0 ? out : [undefined];
  }
  if (isPlainObject(value)) return valuesAt(value[head], rest);
  return [undefined];
}

function equalsQueryValue(value: unknown, query: unknown): boolean {
  if (query instanceof RegExp) {
    const test = (v: unknown) => typeof v === "string" && query.test(v);
    return test(value) || (Array.isArray(value) && value.some(test));
  }
  if (query === null) {
    return value === undefined || value === null || (Array.isArray(value) && value.some((v) => v === null));
  }
  return deepEqual(value, query) || (Array.isArray(value) && value.some((v) => deepEqual(v, query)));
}

const anyEquals = (values: unknown[], query: unknown) => values.some((v) => equalsQueryValue(v, query));

/** Orders two values of the same BSON type bracket; undefined when MongoDB would not compare them. */
function compareSameType(a: unknown, b: unknown): number | undefined {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  return undefined;
}

function comparisonHolds(value: unknown, op: string, query: unknown): boolean {
  if (Array.isArray(value)) return value.some((v) => comparisonHolds(v, op, query));
  if (query === null) return (op === "$gte" || op === "$lte") && (value === null || value === undefined);
  const order = compareSameType(value, query);
  if (order === undefined) return false;
  switch (op) {
    case "$gt": return order > 0;
    case "$gte": return order >= 0;
    case "$lt": return order < 0;
    default: return order <= 0;
  }
}

function requireArray(op: string, arg: unknown): unknown[] {
  if (!Array.isArray(arg)) throw new Error(`${op} needs an array`);
  return arg;
}

/**
 * `$in` lists of plain strings, numbers and booleans as sets: a filter such as
 * `{ _id: { $in: ids } }` is checked against every candidate, and comparing each with every
 * id made a large list quadratic. A set is kept for the current synchronous run only (a
 * query's matching is synchronous), so a list changed by its caller later is read afresh.
 */
let primitiveSets: WeakMap<unknown[], Membership | null> | undefined;
/**
 * Frozen lists cannot change: their membership test is kept as long as the list lives. A frozen
 * list of strings in ascending order (e.g. a filter's resolved contact ids, held once for a
 * whole stream) is searched by bisection, with no second copy of its ids in a set.
 */
const frozenSets = new WeakMap<unknown[], Membership | null>();

type Membership = { has(v: unknown): boolean };

/** Strictly ascending strings (JavaScript order): searched by bisection. */
function sortedStrings(list: unknown[]): Membership | undefined {
  for (let i = 0; i < list.length; i++) {
    if (typeof list[i] !== "string" || (i > 0 && !((list[i - 1] as string) < (list[i] as string)))) return undefined;
  }
  const ids = list as string[];
  return {
    has(v) {
      if (typeof v !== "string") return false;
      let lo = 0, hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (ids[mid] < v) lo = mid + 1;
        else hi = mid;
      }
      return lo < ids.length && ids[lo] === v;
    },
  };
}

function primitiveSetOf(list: unknown[]): Membership | null {
  if (list.length <= 4) return null;
  if (Object.isFrozen(list)) {
    let m = frozenSets.get(list);
    if (m === undefined) {
      const primitive = list.every((q) => typeof q === "string" || typeof q === "boolean" || (typeof q === "number" && !Number.isNaN(q)));
      m = primitive ? (sortedStrings(list) ?? new Set(list)) : null;
      frozenSets.set(list, m);
    }
    return m;
  }
  if (!primitiveSets) {
    primitiveSets = new WeakMap();
    queueMicrotask(() => (primitiveSets = undefined));
  }
  let set = primitiveSets.get(list);
  if (set === undefined) {
    // NaN stays on the comparing path (deepEqual never matches it).
    const primitive = list.every((q) => typeof q === "string" || typeof q === "boolean" || (typeof q === "number" && !Number.isNaN(q)));
    set = primitive ? new Set(list) : null;
    primitiveSets.set(list, set);
  }
  return set;
}

/** True when one of `values` (or an element of an array value) equals one of `list`. */
function anyIn(values: unknown[], list: unknown[]): boolean {
  const set = primitiveSetOf(list);
  if (!set) return list.some((q) => anyEquals(values, q));
  return values.some((v) => set.has(v) || (Array.isArray(v) && v.some((x) => set.has(x))));
}

function matchesOperators(values: unknown[], ops: Plain): boolean {
  for (const [op, arg] of Object.entries(ops)) {
    switch (op) {
      case "$eq":
        if (!anyEquals(values, arg)) return false;
        break;
      case "$ne":
        if (anyEquals(values, arg)) return false;
        break;
      case "$in":
        if (!anyIn(values, requireArray(op, arg))) return false;
        break;
      case "$nin":
        if (anyIn(values, requireArray(op, arg))) return false;
        break;
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte":
        if (!values.some((v) => comparisonHolds(v, op, arg))) return false;
        break;
      case "$exists":
        if (values.some((v) => v !== undefined) !== Boolean(arg)) return false;
        break;
      case "$regex": {
        const options = typeof ops.$options === "string" ? ops.$options : undefined;
        const re = arg instanceof RegExp ? (options ? new RegExp(arg.source, options) : arg) : new RegExp(String(arg), options);
        if (!anyEquals(values, re)) return false;
        break;
      }
      case "$options":
        if (!("$regex" in ops)) throw new Error("$options without $regex");
        break;
      default:
        throw new Error(`unsupported query operator ${op}`);
    }
  }
  return true;
}

function isOperatorObject(value: unknown): value is Plain {
  if (!isPlainObject(value)) return false;
  const first = Object.keys(value)[0];
  return first !== undefined && first.startsWith("$");
}

function requireFilters(op: string, arg: unknown): Filter[] {
  if (!Array.isArray(arg) || arg.length === 0 || !arg.every(isPlainObject)) {
    throw new Error(`${op} needs a non-empty array of filters`);
  }
  return arg as Filter[];
}

/**
 * A filter as one function, for a query that checks many documents against the same filter:
 * paths split, operators looked up, regular expressions built and `$in` lists' sets found once
 * instead of for every document (on a 1,000,000-contact store the re-check of each candidate
 * was a fifth of streaming an audience). Same semantics as matchesFilter, errors included: an
 * unsupported operator throws when a document reaches it, not before.
 */
export function compileFilter(filter: Filter): (doc: Plain) => boolean {
  const checks: ((doc: Plain) => boolean)[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    if (key === "$and" || key === "$or" || key === "$nor") {
      let parts: ((doc: Plain) => boolean)[];
      try {
        parts = requireFilters(key, condition).map(compileFilter);
      } catch (err) {
        checks.push(() => { throw err; });
        break;
      }
      if (key === "$and") checks.push((doc) => parts.every((f) => f(doc)));
      else if (key === "$or") checks.push((doc) => parts.some((f) => f(doc)));
      else checks.push((doc) => !parts.some((f) => f(doc)));
    } else if (key.startsWith("$")) {
      checks.push(() => { throw new Error(`unsupported query operator ${key}`); });
      break;
    } else {
      const segments = key.split(".");
      const at = segments.length === 1 ? (doc: Plain) => (isPlainObject(doc) ? [doc[key]] : [undefined]) : (doc: Plain) => valuesAt(doc, segments);
      if (isOperatorObject(condition)) {
        const ops = compileOperators(condition);
        checks.push((doc) => ops(at(doc)));
      } else {
        checks.push((doc) => anyEquals(at(doc), condition));
      }
    }
  }
  if (checks.length === 1) return checks[0];
  return (doc) => {
    for (const check of checks) if (!check(doc)) return false;
    return true;
  };
}

/** matchesOperators with its per-operator work done once. */
function compileOperators(ops: Plain): (values: unknown[]) => boolean {
  const checks: ((values: unknown[]) => boolean)[] = [];
  for (const [op, arg] of Object.entries(ops)) {
    switch (op) {
      case "$eq":
        checks.push((values) => anyEquals(values, arg));
        break;
      case "$ne":
        checks.push((values) => !anyEquals(values, arg));
        break;
      case "$in":
      case "$nin": {
        if (!Array.isArray(arg)) {
          checks.push(() => requireArray(op, arg) && false);
          break;
        }
        // The list's set is found at the first document, as anyIn finds it.
        let set: Membership | null | undefined;
        const within = (values: unknown[]) => {
          if (set === undefined) set = primitiveSetOf(arg);
          if (!set) return arg.some((q) => anyEquals(values, q));
          const s = set;
          return values.some((v) => s.has(v) || (Array.isArray(v) && v.some((x) => s.has(x))));
        };
        checks.push(op === "$in" ? within : (values) => !within(values));
        break;
      }
      case "$gt":
      case "$gte":
      case "$lt":
      case "$lte":
        checks.push((values) => values.some((v) => comparisonHolds(v, op, arg)));
        break;
      case "$exists": {
        const wanted = Boolean(arg);
        checks.push((values) => values.some((v) => v !== undefined) === wanted);
        break;
      }
      case "$regex": {
        const options = typeof ops.$options === "string" ? ops.$options : undefined;
        const make = () => (arg instanceof RegExp ? (options ? new RegExp(arg.source, options) : arg) : new RegExp(String(arg), options));
        let re: RegExp;
        try {
          re = make();
        } catch (err) {
          checks.push(() => { throw err; });
          break;
        }
        // A global or sticky expression keeps state between tests: one per document, as before.
        const stateful = re.global || re.sticky;
        checks.push((values) => anyEquals(values, stateful ? make() : re));
        break;
      }
      case "$options":
        if (!("$regex" in ops)) checks.push(() => { throw new Error("$options without $regex"); });
        break;
      default:
        checks.push(() => { throw new Error(`unsupported query operator ${op}`); });
    }
  }
  return (values) => {
    for (const check of checks) if (!check(values)) return false;
    return true;
  };
}

export function matchesFilter(doc: Plain, filter: Filter): boolean {
  for (const [key, condition] of Object.entries(filter)) {
    if (key === "$and") {
      if (!requireFilters(key, condition).every((f) => matchesFilter(doc, f))) return false;
    } else if (key === "$or") {
      if (!requireFilters(key, condition).some((f) => matchesFilter(doc, f))) return false;
    } else if (key === "$nor") {
      if (requireFilters(key, condition).some((f) => matchesFilter(doc, f))) return false;
    } else if (key.startsWith("$")) {
      throw new Error(`unsupported query operator ${key}`);
    } else {
      const values = valuesAt(doc, key.split("."));
      const ok = isOperatorObject(condition) ? matchesOperators(values, condition) : anyEquals(values, condition);
      if (!ok) return false;
    }
  }
  return true;
}

const FIELD_OPERATORS = new Set(["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$regex", "$options"]);

/**
 * Checks a filter uses only the port's operators (so both adapters accept the same filters)
 * and rejects `undefined` anywhere a filter compares a value: the MongoDB driver (ignoreUndefined)
 * would silently drop such a condition and match every document, e.g. across tenants.
 */
export function assertDefinedFilter(filter: Filter, where = "filter"): void {
  if (!isPlainObject(filter)) throw new Error(`${where} must be an object`);
  for (const [key, condition] of Object.entries(filter)) {
    if (condition === undefined) throw new Error(`${where}: value for "${key}" is undefined`);
    if (key === "$and" || key === "$or" || key === "$nor") {
      requireFilters(key, condition).forEach((f) => assertDefinedFilter(f, where));
    } else if (key.startsWith("$")) {
      throw new Error(`unsupported query operator ${key}`);
    } else if (isOperatorObject(condition)) {
      for (const [op, arg] of Object.entries(condition)) {
        if (!FIELD_OPERATORS.has(op)) throw new Error(`unsupported query operator ${op}`);
        if (arg === undefined) throw new Error(`${where}: value for "${key}.${op}" is undefined`);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Updates

const UPDATE_OPERATORS = ["$set", "$unset", "$inc", "$push", "$setOnInsert", "$addToSet", "$pull", "$max", "$min"] as const;

/** Throws on anything MongoDB would refuse, so both adapters fail alike. */
export function validateUpdate(update: Update): void {
  if (!isPlainObject(update)) throw new Error("update must be an object");
  const keys = Object.keys(update);
  if (keys.length === 0) throw new Error("Update document requires atomic operators");
  const paths: string[] = [];
  for (const key of keys) {
    if (!(UPDATE_OPERATORS as readonly string[]).includes(key)) throw new Error(`unsupported update operator ${key}`);
    const operand = (update as Plain)[key];
    if (operand === undefined) continue;
    if (!isPlainObject(operand)) throw new Error(`${key} needs an object`);
    for (const [path, value] of Object.entries(operand)) {
      if (value === undefined) continue;
      if (path === "" || path.split(".").some((s) => s === "" || s.startsWith("$"))) {
        throw new Error(`invalid field path "${path}" in ${key}`);
      }
      if (key === "$inc" && typeof value !== "number") throw new Error(`$inc needs a number for "${path}"`);
      if ((key === "$max" || key === "$min") && compareSameType(value, value) === undefined) {
        throw new Error(`${key} needs a number, a string or a date for "${path}"`);
      }
      if (key === "$addToSet") addToSetItems(value);
      if (key === "$pull") pullMatcher(value);
      paths.push(path);
    }
  }
  // Same rule as MongoDB: one update may not touch a path and its parent or itself twice.
  const sorted = [...paths].sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1] || sorted[i].startsWith(`${sorted[i - 1]}.`)) {
      throw new Error(`Updating the path "${sorted[i]}" would create a conflict`);
    }
  }
}

export function getPath(doc: Plain, path: string): unknown {
  let current: unknown = doc;
  for (const segment of path.split(".")) {
    if (Array.isArray(current) && isIndex(segment)) current = current[Number(segment)];
    else if (isPlainObject(current)) current = current[segment];
    else return undefined;
  }
  return current;
}

export function setPath(doc: Plain, path: string, value: unknown): void {
  const segments = path.split(".");
  let container: Plain | unknown[] = doc;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    const last = i === segments.length - 1;
    if (Array.isArray(container)) {
      if (!isIndex(segment)) throw new Error(`cannot create field "${segment}" in an array (path "${path}")`);
      const index = Number(segment);
      while (container.length < index) container.push(null);
      if (last) container[index] = value;
      else {
        if (container[index] === undefined) container[index] = {};
        container = descend(container[index], path);
      }
    } else {
      if (last) container[segment] = value;
      else {
        if (container[segment] === undefined) container[segment] = {};
        container = descend(container[segment], path);
      }
    }
  }
}

function descend(value: unknown, path: string): Plain | unknown[] {
  if (Array.isArray(value) || isPlainObject(value)) return value;
  throw new Error(`cannot create field in a non-object value (path "${path}")`);
}

export function unsetPath(doc: Plain, path: string): void {
  const segments = path.split(".");
  const leaf = segments.pop() as string;
  const parent = segments.length ? getPath(doc, segments.join(".")) : doc;
  if (Array.isArray(parent)) {
    // MongoDB keeps array positions stable: an unset element becomes null.
    if (isIndex(leaf) && Number(leaf) < parent.length) parent[Number(leaf)] = null;
  } else if (isPlainObject(parent)) {
    delete parent[leaf];
  }
}

function pushItems(operand: unknown): { items: unknown[]; slice?: number } {
  if (isPlainObject(operand) && "$each" in operand) {
    for (const key of Object.keys(operand)) {
      if (key !== "$each" && key !== "$slice") throw new Error(`unsupported $push modifier ${key}`);
    }
    const slice = operand.$slice;
    if (slice !== undefined && !Number.isInteger(slice)) throw new Error("$slice needs an integer");
    return { items: requireArray("$each", operand.$each), slice: slice as number | undefined };
  }
  return { items: [operand] };
}

/** The values of an $addToSet operand: one value, or `{ $each: [...] }`. */
function addToSetItems(operand: unknown): unknown[] {
  if (isPlainObject(operand) && "$each" in operand) {
    for (const key of Object.keys(operand)) {
      if (key !== "$each") throw new Error(`unsupported $addToSet modifier ${key}`);
    }
    return requireArray("$each", operand.$each);
  }
  return [operand];
}

/**
 * Which array elements a $pull operand removes (MongoDB rules): an operator object (e.g.
 * `{ $in: [...] }`) is a condition on each element; another object is a query on elements
 * that are sub-documents; any other value removes the elements equal to it.
 */
function pullMatcher(operand: unknown): (item: unknown) => boolean {
  if (isOperatorObject(operand)) {
    for (const op of Object.keys(operand)) if (!FIELD_OPERATORS.has(op)) throw new Error(`unsupported query operator ${op} in $pull`);
    return (item) => matchesOperators([item], operand);
  }
  if (isPlainObject(operand)) {
    assertDefinedFilter(operand, "$pull");
    return (item) => isPlainObject(item) && matchesFilter(item, operand);
  }
  if (operand instanceof RegExp) return (item) => typeof item === "string" && operand.test(item);
  return (item) => deepEqual(item, operand);
}

/** The array at `path` for $addToSet/$pull: undefined when missing, an error when not an array. */
function arrayAt(doc: Plain, path: string, op: string): unknown[] | undefined {
  const current = getPath(doc, path);
  if (current === undefined) return undefined;
  if (!Array.isArray(current)) throw new Error(`Cannot apply ${op} to a non-array value (path "${path}")`);
  return current;
}

/**
 * Returns a new document with the update applied (the input is not touched). `inserting`
 * says whether this is the document an upsert creates, which is when $setOnInsert applies.
 * With `share`, the result shares every branch the update does not write with `doc` (only
 * the containers on written paths are copied): for a document nobody else holds, such as one
 * just read from disk, where a deep copy of the whole document on every update was most of
 * what an update cost.
 */
export function applyUpdate<T extends Plain>(doc: T, update: Update, inserting: boolean, opts: { share?: boolean } = {}): T {
  const owned = opts.share ? new Set<unknown>() : undefined;
  const next = (owned ? copyContainer(doc, owned) : cloneValue(doc)) as Plain;
  const own = (path: string) => {
    if (owned) ownPath(next, path, owned);
  };
  const entries = (operand: Record<string, unknown> | undefined) =>
    Object.entries(operand ?? {}).filter(([, value]) => value !== undefined);

  const assign = (path: string, value: unknown) => {
    if (path === "_id" && !inserting && !deepEqual(next._id, value)) {
      throw new Error("Performing an update on the path '_id' would modify the immutable field '_id'");
    }
    own(path);
    setPath(next, path, cloneValue(value));
  };

  for (const [path, value] of entries(update.$set)) assign(path, value);
  if (inserting) for (const [path, value] of entries(update.$setOnInsert)) assign(path, value);
  for (const [path] of entries(update.$unset)) {
    if (path === "_id") throw new Error("cannot $unset _id");
    own(path);
    unsetPath(next, path);
  }
  for (const [path, amount] of entries(update.$inc)) {
    own(path);
    const current = getPath(next, path);
    if (current !== undefined && typeof current !== "number") {
      throw new Error(`Cannot apply $inc to a value of non-numeric type (path "${path}")`);
    }
    setPath(next, path, ((current as number | undefined) ?? 0) + (amount as number));
  }
  for (const [op, keeps] of [["$max", (order: number) => order > 0], ["$min", (order: number) => order < 0]] as const) {
    for (const [path, value] of entries(update[op])) {
      own(path);
      const current = getPath(next, path);
      if (current === undefined || current === null) {
        setPath(next, path, cloneValue(value));
        continue;
      }
      const order = compareSameType(value, current);
      if (order === undefined) throw new Error(`Cannot apply ${op} to a value of another type than the field's (path "${path}")`);
      if (keeps(order)) setPath(next, path, cloneValue(value));
    }
  }
  for (const [path, operand] of entries(update.$push)) {
    own(path);
    const current = getPath(next, path);
    if (current !== undefined && !Array.isArray(current)) {
      throw new Error(`The field "${path}" must be an array to $push to it`);
    }
    const { items, slice } = pushItems(operand);
    let array = [...((current as unknown[] | undefined) ?? []), ...items.map((item) => cloneValue(item))];
    if (slice !== undefined) array = slice < 0 ? array.slice(slice) : array.slice(0, slice);
    setPath(next, path, array);
  }
  for (const [path, operand] of entries(update.$addToSet)) {
    own(path);
    const current = arrayAt(next, path, "$addToSet");
    const array = current ? current.slice() : [];
    let added = current === undefined;
    for (const item of addToSetItems(operand)) {
      if (array.some((v) => deepEqual(v, item))) continue;
      array.push(cloneValue(item === undefined ? null : item));
      added = true;
    }
    if (added) setPath(next, path, array);
  }
  for (const [path, operand] of entries(update.$pull)) {
    own(path);
    const current = arrayAt(next, path, "$pull");
    if (!current) continue; // MongoDB: nothing to pull from, and no field is created
    const matches = pullMatcher(operand);
    const kept = current.filter((item) => !matches(item));
    if (kept.length !== current.length) setPath(next, path, kept);
  }
  return next as T;
}

/** A shallow copy of an object or array (object: without `undefined` properties, as cloneValue), noted as owned. */
function copyContainer(value: Plain | unknown[], owned: Set<unknown>): Plain | unknown[] {
  let copy: Plain | unknown[];
  if (Array.isArray(value)) copy = value.slice();
  else {
    copy = {};
    for (const key of Object.keys(value)) if (value[key] !== undefined) copy[key] = value[key];
  }
  owned.add(copy);
  return copy;
}

/** Copies the containers above `path` that `next` still shares, so writing at `path` leaves the source alone. */
function ownPath(next: Plain, path: string, owned: Set<unknown>): void {
  const segments = path.split(".");
  let container: Plain | unknown[] = next;
  for (let i = 0; i < segments.length - 1; i++) {
    const segment = segments[i];
    const inArray = Array.isArray(container);
    if (inArray && !isIndex(segment)) return; // setPath refuses it
    const child = inArray ? (container as unknown[])[Number(segment)] : (container as Plain)[segment];
    if (!Array.isArray(child) && !isPlainObject(child)) return; // setPath creates it, or refuses
    const mine = owned.has(child) ? child : copyContainer(child, owned);
    if (inArray) (container as unknown[])[Number(segment)] = mine;
    else (container as Plain)[segment] = mine;
    container = mine as Plain | unknown[];
  }
}

/** The document an upsert starts from: the filter's equality conditions (MongoDB rule). */
export function upsertSeed(filter: Filter): Plain {
  const seed: Plain = {};
  const collect = (f: Filter) => {
    for (const [key, condition] of Object.entries(f)) {
      if (key === "$and") (condition as Filter[]).forEach(collect);
      else if (key.startsWith("$")) continue;
      else if (isOperatorObject(condition)) {
        if ("$eq" in condition) setPath(seed, key, cloneValue(condition.$eq));
      } else if (!(condition instanceof RegExp)) setPath(seed, key, cloneValue(condition));
    }
  };
  collect(filter);
  return seed;
}

/** The `_id` a filter pins by equality, if any. */
export function equalityId(filter: Filter): unknown {
  const id = filter._id;
  if (isOperatorObject(id)) return "$eq" in id ? id.$eq : undefined;
  return id;
}
