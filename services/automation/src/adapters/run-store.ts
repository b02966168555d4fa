/**
 * The run store over the store port. Runs due by time carry `dueAt` (one sparse index is
 * the claim loop's whole queue): a claim moves `dueAt` to the end of its lease, so the runs
 * of a process that died come due again when their lease runs out, and a held or ended run
 * has none. Writes of claimed runs are guarded by the claim's `lease` token and batched
 * into one bulkWrite per flush (with their counters in one more); new runs and first
 * entries are batched the same way, so enrolling thousands at once costs a few
 * transactions, not thousands.
 */
import { randomUUID } from "node:crypto";
import { Coalescer } from "@mailroom/kit/coalesce.js";
import { DuplicateKeyError, type BulkWriteOperation, type Collection, type Filter, type Store, type Update } from "@mailroom/store/port.js";
import type { ExitReason, RunStatus } from "../domain/model.js";
import type { EntryRule, RunQuery, RunStore, RunWrite, StepDelta, StoredRun } from "../domain/runs.js";

type RunDoc = Omit<StoredRun, "id"> & {
  _id: string;
  /** When the claim loop takes it next (absent: held or ended). */
  dueAt?: Date;
  /** The claim holding it. */
  lease?: string;
  /** Changes with every guarded write: tells which writes of a batch landed. */
  rev?: string;
  /** The run's end is not yet announced by webhook. */
  announce?: "completed" | "exited";
};

type CounterDoc = { _id: string; automationId: string; version: number; stepId: string; entered?: number; completed?: number; exited?: number };

type EntryDoc = { _id: string; runId: string; activeRunId?: string; enteredAt: Date };

type EmailDoc = { _id: string; runId: string };
/** The last time a contact's custom event of one name came (wait_for_event entered after it). */
type SeenDoc = { _id: string; at: Date };

/** How long a seen event is remembered: far longer than the gap it covers (enrolment to the claim that enters the step). */
const SEEN_TTL_S = 24 * 3600;

/** Run fields written on every guarded write (unset when undefined). */
const STATE_FIELDS = ["status", "currentStepId", "nextAt", "endedAt", "exitReason", "steps", "waitEvent", "eventArrived", "held"] as const;

const date = (d: unknown) => (d === undefined || d === null ? undefined : new Date(d as string | Date));

function toRun(doc: RunDoc): StoredRun {
  const { _id, dueAt: _d, lease: _l, rev: _r, announce: _a, ...rest } = doc;
  return {
    ...rest,
    id: _id,
    startedAt: date(rest.startedAt)!,
    nextAt: date(rest.nextAt),
    endedAt: date(rest.endedAt),
    steps: (rest.steps ?? []).map((s) => ({ ...s, enteredAt: date(s.enteredAt)!, completedAt: date(s.completedAt) })),
  };
}

function toDoc(run: StoredRun): RunDoc {
  const { id, ...rest } = run;
  const doc: Record<string, unknown> = { _id: id };
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) doc[k] = v;
  return doc as RunDoc;
}

const entryId = (automationId: string, contactId: string) => `${automationId}:${contactId}`;
const counterId = (d: Pick<StepDelta, "automationId" | "version" | "stepId">) => `${d.automationId}:${d.version}:${d.stepId}`;

const encodeCursor = (run: StoredRun) => Buffer.from(JSON.stringify([run.startedAt.getTime(), run.id])).toString("base64url");
function decodeCursor(cursor: string): [number, string] | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    return Array.isArray(v) && typeof v[0] === "number" && typeof v[1] === "string" ? [v[0], v[1]] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * JSON, not NUL-separated: PostgreSQL's text cannot hold a NUL (the write failed there and the
 * event was never seen). A seen event lives for a day and covers seconds, so the keys written
 * before this change need no migration.
 */
const seenKey = (workspaceId: string, contactId: string, name: string) => JSON.stringify([workspaceId, contactId, name]);

export class CollectionRunStore implements RunStore {
  private readonly runs: Collection<RunDoc>;
  private readonly counterDocs: Collection<CounterDoc>;
  private readonly entries: Collection<EntryDoc>;
  private readonly emails: Collection<EmailDoc>;
  private readonly seen: Collection<SeenDoc>;
  private readonly writes = new Coalescer<RunWrite, boolean>((_k, ws) => this.flushWrites(ws), 500);
  private readonly inserts = new Coalescer<RunDoc, boolean>((_k, docs) => this.flushInserts(docs), 500);
  private readonly firstEntries = new Coalescer<EntryDoc, boolean>((_k, docs) => this.flushEntries(docs), 500);
  private readonly remembered = new Coalescer<EmailDoc, void>(async (_k, docs) => {
    await this.emails.bulkWrite(docs.map(({ _id, runId }) => ({ updateOne: { filter: { _id }, update: { $set: { runId } }, upsert: true } })));
    return docs.map(() => undefined);
  }, 500);
  private readonly leaving = new Coalescer<{ _id: string; runId: string }, void>(async (_k, items) => {
    await this.entries.bulkWrite(items.map(({ _id, runId }) => ({ updateOne: { filter: { _id, activeRunId: runId }, update: { $unset: { activeRunId: "" } } } })));
    return items.map(() => undefined);
  }, 500);
  private readonly announcements = new Coalescer<string, void>(async (_k, ids) => {
    await this.runs.updateMany({ _id: { $in: ids } }, { $unset: { announce: "" } });
    return ids.map(() => undefined);
  }, 1_000);

  constructor(store: Store) {
    this.runs = store.collection<RunDoc>("runs");
    this.counterDocs = store.collection<CounterDoc>("step_counters");
    this.entries = store.collection<EntryDoc>("entries");
    this.emails = store.collection<EmailDoc>("run_emails");
    this.seen = store.collection<SeenDoc>("events_seen");
  }

  async init(): Promise<void> {
    await this.runs.createIndex({ keys: { dueAt: 1 }, sparse: true });
    await this.seen.createIndex({ keys: { at: 1 }, expireAfterSeconds: SEEN_TTL_S });
    await this.runs.createIndex({ keys: { automationId: 1, status: 1, startedAt: -1 } });
    await this.runs.createIndex({ keys: { automationId: 1, startedAt: -1 } });
    await this.runs.createIndex({ keys: { contactId: 1, startedAt: -1 } });
    await this.runs.createIndex({ keys: { automationId: 1, version: 1, currentStepId: 1 } });
    await this.runs.createIndex({ keys: { announce: 1 }, sparse: true });
    await this.counterDocs.createIndex({ keys: { automationId: 1, version: 1 } });
  }

  insert(run: StoredRun, dueAt: Date): Promise<boolean> {
    return this.inserts.run("", { ...toDoc(run), dueAt });
  }

  private async flushInserts(docs: RunDoc[]): Promise<boolean[]> {
    // Upserts that only insert: a run that exists (a redelivered trigger) is left as it is.
    const res = await this.runs.bulkWrite(
      docs.map((doc) => {
        const { _id, ...fields } = doc;
        return { updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } };
      }),
    );
    return docs.map((_, i) => res.upsertedIds[i] !== undefined);
  }

  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<{ lease: string; runs: StoredRun[] }> {
    const lease = randomUUID();
    const due = await this.runs.find({ dueAt: { $lte: now } }, { sort: { dueAt: 1 }, limit, projection: { _id: 1 } });
    if (!due.length) return { lease, runs: [] };
    const ids = due.map((d) => d._id);
    // The compare-and-set: only runs still due are taken (another process's claim moved theirs).
    await this.runs.updateMany({ _id: { $in: ids }, dueAt: { $lte: now } }, { $set: { dueAt: leaseUntil, lease } });
    const claimed = await this.runs.find({ _id: { $in: ids }, lease });
    return { lease, runs: claimed.map(toRun) };
  }

  save(write: RunWrite): Promise<boolean> {
    return this.writes.run("", write);
  }

  private async flushWrites(writes: RunWrite[]): Promise<boolean[]> {
    const revs = writes.map(() => randomUUID());
    const ops: BulkWriteOperation<RunDoc>[] = writes.map((w, i) => ({
      updateOne: { filter: { _id: w.run.id, lease: w.lease }, update: this.updateOf(w, revs[i]!) },
    }));
    const res = await this.runs.bulkWrite(ops);
    let landed = writes.map(() => true);
    if (res.matchedCount < writes.length) {
      const docs = await this.runs.find({ _id: { $in: writes.map((w) => w.run.id) } }, { projection: { _id: 1, rev: 1 } });
      const revOf = new Map(docs.map((d) => [d._id, d.rev]));
      landed = writes.map((w, i) => revOf.get(w.run.id) === revs[i]);
    }
    const deltas = writes.flatMap((w, i) => (landed[i] ? (w.deltas ?? []) : []));
    if (deltas.length) await this.bump(deltas);
    return landed;
  }

  private updateOf(w: RunWrite, rev: string): Update {
    const set: Record<string, unknown> = { rev };
    const unset: Record<string, ""> = {};
    for (const field of STATE_FIELDS) {
      const value = w.run[field];
      if (value === undefined) unset[field] = "";
      else set[field] = value;
    }
    if (w.announce) set.announce = w.announce;
    if (w.release) {
      unset.lease = "";
      if (w.release.dueAt) set.dueAt = w.release.dueAt;
      else unset.dueAt = "";
    }
    return Object.keys(unset).length ? { $set: set, $unset: unset } : { $set: set };
  }

  async get(runId: string): Promise<StoredRun | null> {
    const doc = await this.runs.findOne({ _id: runId });
    return doc ? toRun(doc) : null;
  }

  async activeOfContact(workspaceId: string, contactId: string): Promise<StoredRun[]> {
    const docs = await this.runs.find({ contactId }, { sort: { startedAt: -1 }, limit: 1_000 });
    return docs.filter((d) => d.workspaceId === workspaceId && d.status === "ACTIVE").map(toRun);
  }

  async forgetContact(workspaceId: string, contactId: string): Promise<void> {
    await this.runs.updateMany({ contactId, workspaceId }, { $set: { email: "" } });
  }

  async exit(runId: string, reason: ExitReason, at: Date): Promise<{ run: StoredRun; atStep?: string } | null> {
    const before = await this.runs.findOneAndUpdate(
      { _id: runId, status: "ACTIVE" },
      {
        $set: { status: "EXITED", exitReason: reason, endedAt: at, announce: "exited", rev: randomUUID() },
        $unset: { currentStepId: "", nextAt: "", dueAt: "", lease: "", waitEvent: "", eventArrived: "", held: "" },
      },
      { returnDocument: "before" },
    );
    if (!before) return null;
    const run = toRun(before);
    const atStep = run.currentStepId;
    return { run: { ...run, status: "EXITED", exitReason: reason, endedAt: at, currentStepId: undefined, nextAt: undefined, waitEvent: undefined, eventArrived: undefined, held: undefined }, atStep };
  }

  async sawEvent(workspaceId: string, contactId: string, name: string, at: Date): Promise<void> {
    const _id = seenKey(workspaceId, contactId, name);
    // Only ever later: a late redelivery of an old event does not move it back.
    const res = await this.seen.updateOne({ _id, at: { $lt: at } }, { $set: { at } });
    if (!res.matchedCount) await this.seen.updateOne({ _id }, { $setOnInsert: { at } }, { upsert: true });
  }

  async eventSince(workspaceId: string, contactId: string, name: string, since: Date): Promise<boolean> {
    const doc = await this.seen.findOne({ _id: seenKey(workspaceId, contactId, name) });
    return Boolean(doc && new Date(doc.at).getTime() >= since.getTime());
  }

  async signal(runId: string, stepId: string, event: string, at: Date): Promise<boolean> {
    // Taking the lease away makes a claim in flight (deciding the timeout) lose its write.
    const res = await this.runs.updateOne(
      { _id: runId, status: "ACTIVE", currentStepId: stepId, waitEvent: event, eventArrived: { $exists: false } },
      { $set: { eventArrived: true, dueAt: at, rev: randomUUID() }, $unset: { lease: "" } },
    );
    return res.matchedCount === 1;
  }

  async hold(automationId: string): Promise<number> {
    const res = await this.runs.updateMany({ automationId, status: "ACTIVE" }, { $set: { held: true }, $unset: { dueAt: "" } });
    return res.modifiedCount;
  }

  async release(automationId: string, at: Date): Promise<number> {
    // Every held run is looked at once: one whose wait has not ended goes back to its nextAt.
    const res = await this.runs.updateMany({ automationId, status: "ACTIVE", held: true }, { $set: { dueAt: at }, $unset: { held: "" } });
    return res.modifiedCount;
  }

  async activeIds(automationId: string, limit: number): Promise<string[]> {
    return (await this.runs.find({ automationId, status: "ACTIVE" }, { limit, projection: { _id: 1 } })).map((d) => d._id);
  }

  async counts(automationId: string) {
    const [active, completed, exited] = await Promise.all(
      (["ACTIVE", "COMPLETED", "EXITED"] as RunStatus[]).map((status) => this.runs.countDocuments({ automationId, status })),
    );
    return { active: active!, completed: completed!, exited: exited! };
  }

  async list(query: RunQuery): Promise<{ runs: StoredRun[]; nextCursor?: string }> {
    const parts: Filter[] = [];
    if (query.automationId) parts.push({ automationId: query.automationId });
    if (query.contactId) parts.push({ contactId: query.contactId });
    if (query.status) parts.push({ status: query.status });
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    if (after) {
      const at = new Date(after[0]);
      parts.push({ $or: [{ startedAt: { $lt: at } }, { startedAt: at, _id: { $lt: after[1] } }] });
    }
    const filter = parts.length === 1 ? parts[0]! : { $and: parts };
    const docs = await this.runs.find(filter, { sort: { startedAt: -1, _id: -1 }, limit: query.limit + 1 });
    const runs = docs.slice(0, query.limit).map(toRun);
    return { runs, nextCursor: docs.length > query.limit ? encodeCursor(runs[runs.length - 1]!) : undefined };
  }

  async waiting(automationId: string, version: number, stepIds: string[]): Promise<Map<string, number>> {
    const counts = await Promise.all(stepIds.map((currentStepId) => this.runs.countDocuments({ automationId, version, currentStepId })));
    return new Map(stepIds.map((id, i) => [id, counts[i]!]));
  }

  async counters(automationId: string, version: number) {
    const docs = await this.counterDocs.find({ automationId, version });
    return new Map(docs.map((d) => [d.stepId, { entered: d.entered ?? 0, completed: d.completed ?? 0, exited: d.exited ?? 0 }]));
  }

  async bump(deltas: StepDelta[]): Promise<void> {
    const merged = new Map<string, StepDelta>();
    for (const d of deltas) {
      const key = counterId(d);
      const m = merged.get(key) ?? { automationId: d.automationId, version: d.version, stepId: d.stepId, entered: 0, completed: 0, exited: 0 };
      m.entered! += d.entered ?? 0;
      m.completed! += d.completed ?? 0;
      m.exited! += d.exited ?? 0;
      merged.set(key, m);
    }
    const ops: BulkWriteOperation<CounterDoc>[] = [...merged].map(([key, d]) => {
      const inc: Record<string, number> = {};
      if (d.entered) inc.entered = d.entered;
      if (d.completed) inc.completed = d.completed;
      if (d.exited) inc.exited = d.exited;
      return {
        updateOne: {
          filter: { _id: key },
          update: { $inc: inc, $setOnInsert: { automationId: d.automationId, version: d.version, stepId: d.stepId } },
          upsert: true,
        },
      };
    });
    if (ops.length) await this.counterDocs.bulkWrite(ops);
  }

  async enter(automationId: string, contactId: string, runId: string, rule: EntryRule, now: Date): Promise<boolean> {
    const _id = entryId(automationId, contactId);
    if (await this.firstEntries.run("", { _id, runId, activeRunId: runId, enteredAt: now })) return true;
    for (let attempt = 0; attempt < 3; attempt++) {
      const entry = await this.entries.findOne({ _id });
      if (!entry) {
        try {
          await this.entries.insertOne({ _id, runId, activeRunId: runId, enteredAt: now });
          return true;
        } catch (err) {
          if (err instanceof DuplicateKeyError) continue;
          throw err;
        }
      }
      // This very run holds the entry: its trigger is being handled again.
      if (entry.runId === runId) return true;
      if (rule.kind === "once") return false;
      if (entry.activeRunId) {
        // A run that ended without leaving (its process died in between) frees the entry.
        const active = await this.runs.findOne({ _id: entry.activeRunId }, { projection: { _id: 1, status: 1 } });
        if (active && active.status === "ACTIVE") return false;
        await this.entries.updateOne({ _id, activeRunId: entry.activeRunId }, { $unset: { activeRunId: "" } });
        continue;
      }
      if (rule.kind === "after" && new Date(entry.enteredAt).getTime() > now.getTime() - rule.ms) return false;
      const res = await this.entries.updateOne(
        { _id, runId: entry.runId, activeRunId: { $exists: false } },
        { $set: { runId, activeRunId: runId, enteredAt: now } },
      );
      if (res.matchedCount === 1) return true;
    }
    return false;
  }

  /** First entries of a batch: insert-if-absent upserts; true where this call inserted it. */
  private async flushEntries(docs: EntryDoc[]): Promise<boolean[]> {
    const res = await this.entries.bulkWrite(
      docs.map(({ _id, ...fields }) => ({ updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } })),
    );
    return docs.map((_, i) => res.upsertedIds[i] !== undefined);
  }

  async leave(automationId: string, contactId: string, runId: string): Promise<void> {
    await this.leaving.run("", { _id: entryId(automationId, contactId), runId });
  }

  async rememberEmail(emailId: string, runId: string): Promise<void> {
    await this.remembered.run("", { _id: emailId, runId });
  }

  async runOfEmail(emailId: string): Promise<string | null> {
    return (await this.emails.findOne({ _id: emailId }))?.runId ?? null;
  }

  async unannounced(before: Date, limit: number): Promise<StoredRun[]> {
    const docs = await this.runs.find({ announce: { $exists: true }, endedAt: { $lt: before } }, { limit });
    return docs.map(toRun);
  }

  async announced(runIds: string[]): Promise<void> {
    await Promise.all(runIds.map((id) => this.announcements.run("", id)));
  }
}
