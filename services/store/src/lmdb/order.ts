/** Sorting and projection of documents read by the LMDB store. */
import type { Doc, Sort } from "../port.js";
import { getPath, setPath, unsetPath } from "../query.js";
import { T_BOOL, T_DATE, T_NULL, T_NUM, T_STR, typeTag } from "./keys.js";

// ---------------------------------------------------------------------------------------------
// Sorting (MongoDB order of types; arrays sort by their smallest / largest element).

export function compareValues(a: unknown, b: unknown): number {
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

export function sorter(sort: Sort): (a: Doc, b: Doc) => number {
  const keys = Object.entries(sort);
  return (a, b) => {
    for (const [path, dir] of keys) {
      const c = compareValues(sortValue(a, path, dir), sortValue(b, path, dir));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}

export function project<T extends Doc>(doc: T, projection: Record<string, 0 | 1> | undefined): T {
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
