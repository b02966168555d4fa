/** countDocuments from index entries, without reading documents, when the entries are the filter. */
import type { Database } from "lmdb";
import type { Doc, Filter } from "../port.js";
import { type CollectionMeta, type IndexDef, KEY_STRING_MAX, conjunction, entryId, flatKey, partFields, wholeIn, wholeInKey } from "./keys.js";
import { type Plan, asciiLists } from "./planner.js";

/** The trees a count reads, and the collection's scan of an index plan's _ids (LmdbCollection.indexIds). */
export interface CountSource {
  docs: Database<Doc, string>;
  index: Database<Buffer, (string | number)[]>;
  indexIds(plan: Plan): Iterable<string>;
}

/**
 * Counts index entries instead of reading documents when the index range IS the filter:
 * equality on primitive values of a prefix of the index's fields, one range, no arrays
 * indexed, no TTL. Counting a workspace's million contacts then reads only index pages
 * (a tenth of the data), not every document.
 */
export function countIndexEntries(c: CountSource, filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
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
  for (const _ of c.index.getKeys(plan.ranges![0] as never)) n++;
  return n;
}

/**
 * Counts the _ids of wildcard index entries without reading documents when the filter is
 * exactly what entries say: a conjunction (top level and $and) of equality on the fields
 * before the wildcard, equality or $in on one path under its root, and equality on other
 * fields that an index ending in _id holds whole (e.g. { workspaceId, status, _id }): each
 * candidate _id is then checked by looking up its entry there, not by reading it.
 */
export function countWildcardEntries(c: CountSource, filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
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
    for (const _ of c.indexIds(plan)) n++;
    return n;
  }
  // The candidates first, then the lookups (no lookup while the range is being read).
  for (const id of [...c.indexIds(plan)]) if (c.index.doesExist(flatKey(probe, [...values, id]))) n++;
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
export function countIdEntries(c: CountSource, filter: Filter, plan: Plan, meta: CollectionMeta): number | undefined {
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
    for (let i = from; i < to; i++) if (c.docs.doesExist(ids[i])) n++;
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
    for (const entry of c.index.getKeys({ start, end } as never)) {
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
    if (c.index.doesExist(key)) n++;
  }
  return n;
}
