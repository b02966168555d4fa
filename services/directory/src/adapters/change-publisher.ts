import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DuplicateKeyError, type Collection, type Store } from "@mailroom/store/port.js";
import { directoryEventSubject } from "@mailroom/pipeline/subjects.js";
import type { Logger } from "@mailroom/kit/logger.js";
import type { DirectoryEvent, DirectoryEventPublisher } from "../domain/changes.js";

type Pending = {
  _id: string;
  subject: string;
  body: string;
  createdAt: Date;
  /** Write order in this process (several events can share a millisecond). */
  seq: number;
};

export const CHANGE_OUTBOX_COLLECTION = "directory_event_outbox";
const SWEEP_MS = 5_000;

/**
 * Publish-after-commit with a recovery path (not a transactional outbox): the store has no
 * transaction spanning two collections (a contact's write and an outbox row), and a read of
 * the contacts to find unannounced changes would scan every contact. So each event is
 * built once its write has committed (changes.ts), recorded here in directory_event_outbox,
 * published to JetStream with Nats-Msg-Id = the event id, and its record removed once
 * JetStream acknowledged it. Records left by a NATS outage, a failed publish or a process
 * that stopped are published again by the sweep (every few seconds and at start); the
 * event id makes that republish harmless (the stream drops a duplicate id, the webhooks
 * unit keeps one delivery per event and webhook). What is not covered: a process killed in
 * the few milliseconds between the contact's write and the record's insert loses that
 * change's events.
 */
export class ChangePublisher {
  private recording: Promise<void> = Promise.resolve();
  private flushAgain = false;
  private flushing?: Promise<void>;
  private seq = 0;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  /** The sweep reads the oldest records by `seq`: without this index each page of 500 sorted every record. */
  private readonly indexed: Promise<void>;

  private constructor(
    private readonly outbox: Collection<Pending>,
    private readonly js: Promise<JetStreamClient>,
    private readonly logger: Logger,
  ) {
    this.indexed = outbox.createIndex({ keys: { seq: 1 } });
    this.indexed.catch(() => {});
  }

  static open(store: Store, connection: Promise<NatsConnection>, logger: Logger): ChangePublisher {
    const js = connection.then((nc) => jetstream(nc));
    js.catch(() => {});
    const publisher = new ChangePublisher(store.collection<Pending>(CHANGE_OUTBOX_COLLECTION), js, logger);
    return publisher;
  }

  /** For the directory's use cases: never throws, keeps the order of the writes. */
  readonly publish: DirectoryEventPublisher = (events: DirectoryEvent[]) => {
    const now = new Date();
    const pending = events.map((e) => ({ _id: e.id, subject: directoryEventSubject(e.type), body: JSON.stringify(e), createdAt: now, seq: now.getTime() * 1000 + (this.seq++ % 1000) }));
    const recorded = this.recording
      .then(() => this.record(pending))
      .catch((err) => this.logger.warn({ err, events: pending.map((p) => p._id) }, "directory events not recorded"));
    this.recording = recorded;
    // Not awaited: while NATS is away the records keep being written (flush waits for it).
    void recorded.then(() => this.flush());
    return recorded;
  };

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
        this.logger.warn({ err }, "directory events not announced yet; the sweep retries");
      } finally {
        this.flushing = undefined;
      }
    })();
    return this.flushing;
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
