import { createHash } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import { directoryEventSubject } from "@mailroom/pipeline/subjects.js";
import { directoryEventBatchBody, directoryEventBatches } from "@mailroom/pipeline/directory-events.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { ChangeIntent, ChangeIntentRecorder, DirectoryEvent, DirectoryEventPublisher } from "./change-events.js";

/** Rebuilds the events of an intent left by a write whose process stopped, from what the store holds now (none when it did not land). */
export type IntentRebuilder = (intent: ChangeIntent) => Promise<DirectoryEvent[]>;

type Pending = {
  _id: string;
  subject: string;
  body: string;
  createdAt: Date;
  /** Write order in this process (several events can share a millisecond). */
  seq: number;
};

type IntentRecord = { _id: string; intent: string; createdAt: Date };

export const CHANGE_OUTBOX_COLLECTION = "directory_event_outbox";
export const CHANGE_INTENTS_COLLECTION = "directory_change_intents";
const SWEEP_MS = 5_000;
/** An intent older than this belongs to a write that died (a live one settles within milliseconds). */
const ABANDONED_INTENT_MS = 60_000;
/**
 * Events whose writes come by the thousand (an import's suppressions): those of one write
 * travel as batch messages (pipeline/directory-events.ts), one record and one publish per
 * batch, not per event. Contact events stay one message each (their writes are small, and
 * each event is a message of its own in the stream as before).
 */
const BATCHED_TYPES: ReadonlySet<string> = new Set(["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"]);

/**
 * Publish-after-commit with a recovery path for both gaps. The store has no transaction
 * spanning two collections (a contact's write and an outbox row), so:
 * - before a write, its intent (what it is about to change, the contacts as they were) is
 *   recorded in directory_change_intents;
 * - once the write committed, its events (changes.ts) are recorded here in
 *   directory_event_outbox, which settles the intent, then published to JetStream with
 *   Nats-Msg-Id = the event id, and their records removed once JetStream acknowledged them.
 * Records left by a NATS outage, a failed publish or a stopped process are published again
 * by the sweep (every few seconds and at start). Intents left by a process killed between a
 * write and its events' record are recovered at start (and, from other processes, once a
 * minute old): the events are rebuilt from the intent and what the store holds now — none if
 * the write did not land. Event ids come from what was written, so a republish or a recovery
 * of events that did go out is harmless (the stream drops a duplicate id, the webhooks unit
 * keeps one delivery per event and webhook).
 */
/** Date fields of a stored contact, workspace or member (the intent's JSON has them as strings). */
const DATE_FIELDS = new Set(["createdAt", "updatedAt", "statusChangedAt", "at", "unsubscribedAt"]);

export class ChangePublisher {
  private recording: Promise<void> = Promise.resolve();
  private flushAgain = false;
  private flushing?: Promise<void>;
  private seq = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  /** The sweep reads the oldest records by `seq`: without this index each page of 500 sorted every record. */
  private readonly indexed: Promise<void>;

  private recovery?: IntentRebuilder;

  private constructor(
    private readonly outbox: Collection<Pending>,
    private readonly intents: Collection<IntentRecord>,
    private readonly js: Promise<JetStreamClient>,
    private readonly logger: Logger,
  ) {
    this.indexed = outbox.createIndex({ keys: { seq: 1 } });
    this.indexed.catch(() => {});
  }

  static open(store: Store, connection: Promise<NatsConnection>, logger: Logger): ChangePublisher {
    const js = connection.then((nc) => jetstream(nc));
    js.catch(() => {});
    const publisher = new ChangePublisher(store.collection<Pending>(CHANGE_OUTBOX_COLLECTION), store.collection<IntentRecord>(CHANGE_INTENTS_COLLECTION), js, logger);
    return publisher;
  }

  /** Before a write: throws when the intent cannot be stored (then the write is not made). */
  readonly intend: ChangeIntentRecorder = async (intent: ChangeIntent) => {
    await this.intents.insertOne({ _id: intent.id, intent: JSON.stringify(intent), createdAt: new Date(intent.at) });
  };

  /** For the units' use cases: never throws, keeps the order of the writes. */
  readonly publish: DirectoryEventPublisher = (events: DirectoryEvent[], settles?: ChangeIntent) => {
    const pending = this.pendingOf(events);
    const recorded = this.recording
      .then(() => this.record(pending))
      .catch((err) => {
        this.logger.warn({ err, events: pending.map((p) => p._id) }, "change events not recorded");
        throw err;
      });
    this.recording = recorded.catch(() => undefined);
    // Settled once its events are recorded (a failure leaves the intent to recovery). Not
    // awaited by the write: an intent left over only costs a recovery that changes nothing.
    if (settles) void recorded.then(() => this.intents.deleteOne({ _id: settles.id })).catch(() => undefined);
    // Not awaited: while NATS is away the records keep being written (flush waits for it).
    void recorded.then(() => this.flush(), () => undefined);
    return recorded.catch(() => undefined);
  };

  /**
   * Recovers the intents of writes whose process stopped before their events were recorded:
   * every intent now, then (other processes' leftovers) those a minute old on each sweep.
   * `state` reads the store without emitting.
   */
  async recover(rebuild: IntentRebuilder, olderThanMs = 0): Promise<number> {
    this.recovery = rebuild;
    const before = new Date(Date.now() - olderThanMs);
    let recovered = 0;
    for (;;) {
      const left = await this.intents.find({ createdAt: { $lt: before } }, { limit: 100 });
      if (!left.length) return recovered;
      for (const record of left) {
        const intent = JSON.parse(record.intent, (k, v) => (typeof v === "string" && DATE_FIELDS.has(k) ? new Date(v) : v)) as ChangeIntent;
        const events = await rebuild(intent);
        if (events.length) this.logger.warn({ intent: intent.id, events: events.map((e) => e.type) }, "recovered the events of a write whose process stopped before recording them");
        await this.record(this.pendingOf(events));
        await this.intents.deleteOne({ _id: record._id });
        recovered++;
      }
      void this.flush();
    }
  }

  /** Records written so far, published (coalesced: one pass at a time). */
  flush(): Promise<void> {
    if (this.flushing) {
      this.flushAgain = true;
      return this.flushing;
    }
    this.flushing = (async () => {
      try {
        do {
          this.flushAgain = false;
          while ((await this.sweep()) > 0 && !this.stopped);
        } while (this.flushAgain && !this.stopped);
      } catch (err) {
        this.logger.warn({ err }, "change events not announced yet; the sweep retries");
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
  }

  /**
   * The outbox records of one write's events: one per event, or one per batch message for
   * BATCHED_TYPES when the write has several. A batch's id (its message id) comes from its
   * events' ids, so the same write announced twice is one record and one message.
   */
  private pendingOf(events: DirectoryEvent[]): Pending[] {
    const now = new Date();
    const pending: Pending[] = [];
    const add = (_id: string, subject: string, body: string) => pending.push({ _id, subject, body, createdAt: now, seq: now.getTime() * 1000 + (this.seq++ % 1000) });
    const batched = new Map<string, DirectoryEvent[]>();
    for (const e of events) {
      if (BATCHED_TYPES.has(e.type) && events.length > 1) {
        const list = batched.get(e.type);
        if (list) list.push(e);
        else batched.set(e.type, [e]);
      } else add(e.id, directoryEventSubject(e.type), JSON.stringify(e));
    }
    for (const [type, list] of batched) {
      let at = 0;
      for (const bodies of directoryEventBatches(list.map((e) => JSON.stringify(e)))) {
        const ids = list.slice(at, (at += bodies.length)).map((e) => e.id);
        const id = bodies.length === 1 ? ids[0] : `devb_${createHash("sha256").update(ids.join("\u0000")).digest("hex").slice(0, 32)}`;
        add(id, directoryEventSubject(type), bodies.length === 1 ? bodies[0] : directoryEventBatchBody(bodies));
      }
    }
    return pending;
  }

  private async record(pending: Pending[]): Promise<void> {
    if (pending.length === 0) return;
    try {
      // A batch of contacts writes its events' records in one go.
      await this.outbox.insertMany(pending);
      return;
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
    }
    // Some were recorded before (a write announced again): keep those, add the rest.
    for (const p of pending) {
      try {
        await this.outbox.insertOne(p);
      } catch (err) {
        if (!(err instanceof DuplicateKeyError)) throw err;
      }
    }
  }

  /** Publishes leftover records now and every few seconds. */
  startSweep(): void {
    const tick = async () => {
      if (this.stopped) return;
      if (this.recovery) await this.recover(this.recovery, ABANDONED_INTENT_MS).catch((err) => this.logger.warn({ err }, "recovering write intents failed; the next sweep retries"));
      await this.flush();
      if (this.stopped) return;
      this.timer = setTimeout(tick, SWEEP_MS);
      this.timer.unref?.();
    };
    void tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.recording.catch(() => {});
    await this.flushing;
  }

  /** Publishes the oldest records (up to 500); answers how many were published. */
  private async sweep(): Promise<number> {
    await this.indexed;
    // The range (every seq is positive) lets the embedded store walk the index in order; it
    // plans a sort without a condition as a scan and sort of every record (350 ms a page at
    // 100,000 records, 4 ms through the index).
    const pending = await this.outbox.find({ seq: { $gte: 0 } }, { sort: { seq: 1 }, limit: 500 });
    if (!pending.length) return 0;
    const js = await this.js;
    // Published together (one connection keeps their order), then removed together: a page
    // waited 500 round trips one by one. A failure leaves the page for the next pass, whose
    // republish of what did go out the event ids make harmless.
    const encoder = new TextEncoder();
    await Promise.all(pending.map((p) => js.publish(p.subject, encoder.encode(p.body), { msgID: p._id })));
    await this.outbox.deleteMany({ _id: { $in: pending.map((p) => p._id) } });
    return pending.length;
  }
}
