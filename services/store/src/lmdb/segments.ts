/** findIdSegments read straight from the key bytes of an index or documents range. */
import type { Database } from "lmdb";
import { readKey as readOrderedKey, writeKey as writeOrderedKey } from "ordered-binary";
import { type Filter, type IdSegment, idSegment } from "../port.js";
import { isPlainObject } from "../query.js";
import { type CollectionMeta, KEY_STRING_MAX, conjunction, partFields, wholeIn, wholeInKey } from "./keys.js";
import type { Plan } from "./planner.js";

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
export const segmentKeys = {
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

export const PRINTABLE = /^[\x20-\x7e]*$/;

/** The segments of the keys of the plan's one range (exactly the filter: see exactRange), in batches. */
export function* segmentBatches(db: Database<Buffer, string>, plan: Plan, segment: IdSegment, excluded: string[], batchSize: number): Generator<string[]> {
  const reader: SegmentReader = {
    primary: plan.kind === "primary",
    prefix: Buffer.from(segment.prefix, "latin1"),
    end: segment.end === undefined ? -1 : segment.end.charCodeAt(0),
    segment,
    excluded: excluded.filter((x) => PRINTABLE.test(x)).map((x) => Buffer.from(x, "latin1")),
  };
  const range = plan.ranges![0];
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
export function exactRange(filter: Filter, plan: Plan, meta: CollectionMeta): { excluded: string[] } | undefined {
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
