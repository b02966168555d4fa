/** The LMDB store's query planner: which tree or index range answers a filter, in which order. */
import type { Filter, Sort } from "../port.js";
import { isPlainObject } from "../query.js";
import { HIGH, type IndexDef, KEY_STRING_MAX, indexable, ixKey, keyPart, listFacts, partFields, tagBase, tagChar, typeTag } from "./keys.js";
import { compareValues } from "./order.js";

// ---------------------------------------------------------------------------------------------
// Planning

interface FieldCondition {
  eq?: unknown;
  hasEq?: boolean;
  in?: unknown[];
  lo?: unknown;
  hi?: unknown;
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

export type Range = { start: unknown[] | string; end: unknown[] | string };

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
export const asciiLists = new WeakSet<string[]>();

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

/** First position in sorted `ids` whose id is >= `id` (with `after`: > `id`). */
export function bisect(ids: string[], id: string, after = false): number {
  let lo = 0, hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid] < id || (after && ids[mid] === id)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
