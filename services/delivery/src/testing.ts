/**
 * In-memory adapters for the delivery service's ports, and a builder that assembles the
 * domain with them. Used by the unit tests beside the code, test/delivery suites and the bench.
 */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { pino } from "pino";
import { openMemoryStore } from "@mailroom/store/open.js";
import {
  CompiledMessageSchema,
  CompiledTemplateSchema,
  ContentKind,
  SegmentSchema,
  type CompiledMessage,
  type Segment,
} from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { StoreContentSource, type CompiledMessageSource } from "./adapters/content-source.js";
import { RendererMerger } from "./adapters/merger.js";
import { StoreDeliveries } from "./adapters/store.js";
import { Deliverer, type DelivererOptions, type JobContext } from "./domain/deliverer.js";
import type { Job, Page } from "./domain/job.js";
import { Pacer } from "./domain/pacer.js";
import {
  PermanentError,
  SmtpFailure,
  type DeliveryMetrics,
  type EventPublisher,
  type MailTransport,
  type OutcomeEvent,
  type OutgoingMail,
  type PacingRepository,
  type RetryQueue,
  type SendResult,
  type SenderCheck,
  type SenderDirectory,
  type TokenGrant,
} from "./domain/ports.js";
import { takeFromBucket, type BucketState } from "@mailroom/kit/token-bucket.js";

/** A compiled message from a template string with {{variables}} (no links, no pixel). */
export function compiledFrom(parts: { subject: string; html: string; text?: string; broadcast?: boolean; workspaceId?: string }): CompiledMessage {
  return create(CompiledMessageSchema, {
    subject: template(parts.subject),
    html: template(parts.html),
    text: template(parts.text ?? parts.html.replace(/<[^>]+>/g, "")),
    previewText: template(""),
    kind: parts.broadcast ? ContentKind.BROADCAST : ContentKind.TRANSACTIONAL,
    workspaceId: parts.workspaceId ?? "ws_test",
  });
}

function template(source: string) {
  const segments: Segment[] = [];
  let last = 0;
  for (const m of source.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)) {
    if (m.index > last) segments.push(create(SegmentSchema, { part: { case: "literal", value: source.slice(last, m.index) } }));
    segments.push(create(SegmentSchema, { part: { case: "variable", value: m[1] } }));
    last = m.index + m[0].length;
  }
  if (last < source.length) segments.push(create(SegmentSchema, { part: { case: "literal", value: source.slice(last) } }));
  return create(CompiledTemplateSchema, { segments });
}

export class FakeContentSource implements CompiledMessageSource {
  readonly contents = new Map<string, CompiledMessage>();
  calls = 0;
  /** Set to make the next calls fail as if the owning service were down. */
  unavailable = false;

  async get(workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    this.calls += 1;
    if (this.unavailable) throw new Error("connect ECONNREFUSED (content owner down)");
    const c = this.contents.get(`${workspaceId}/${contentRef}`);
    if (!c) throw new PermanentError(`content ${contentRef}: not found`);
    return c;
  }

  put(workspaceId: string, contentRef: string, compiled: CompiledMessage): void {
    this.contents.set(`${workspaceId}/${contentRef}`, compiled);
  }

  /** Content a job carries: its StoredContent bytes, decoded as the store's source decodes them. */
  decode(workspaceId: string, contentRef: string, stored: Uint8Array): CompiledMessage {
    return new StoreContentSource({ getStored: async () => undefined }).decode(workspaceId, contentRef, stored);
  }
}

export class FakeDirectory implements SenderDirectory {
  readonly senders = new Map<string, SenderCheck>();
  readonly suppressed: Array<{ workspaceId: string; email: string; detail: string }> = [];
  failSuppression = false;

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
    const known = this.senders.get(`${workspaceId}/${address.toLowerCase()}`);
    return known ?? { allowed: false, address, name: "" };
  }

  allow(workspaceId: string, address: string, dkim?: SenderCheck["dkim"]): void {
    this.senders.set(`${workspaceId}/${address.toLowerCase()}`, { allowed: true, address, name: "", dkim });
  }

  async suppressOther(workspaceId: string, email: string, detail: string): Promise<void> {
    if (this.failSuppression) throw new Error("audience unit unavailable");
    this.suppressed.push({ workspaceId, email, detail });
  }
}

export class RecordingEvents implements EventPublisher {
  readonly events: OutcomeEvent[] = [];
  failNext = 0;

  async publish(event: OutcomeEvent): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error("nats: publish timed out");
    }
    this.events.push(event);
  }

  types(): string[] {
    return this.events.map((e) => e.type);
  }
}

/** Records the recipients handed on as jobs of their own (a page's deferrals). */
export class RecordingRetries implements RetryQueue {
  readonly handedOn: Array<{ job: Job; notBefore: number }> = [];
  failNext = 0;

  async handOn(job: Job, notBefore: number): Promise<void> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error("nats: publish timed out");
    }
    this.handedOn.push({ job, notBefore });
  }
}

export type ScriptedReply = { kind: "accept" } | { kind: "reject"; code: number; aboutRecipient?: boolean } | { kind: "drop" };

/** A transport that answers from a script (default: accept) and records what it was given. */
export class ScriptedTransport implements MailTransport {
  readonly description = "scripted";
  readonly capturing = false;
  readonly sent: OutgoingMail[] = [];
  readonly attempts: OutgoingMail[] = [];
  script: ScriptedReply[] = [];
  delayMs = 0;
  /** Set: named as the route on results and failures, as the routing transport does. */
  route?: string;

  async send(mail: OutgoingMail): Promise<SendResult> {
    this.attempts.push(mail);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const reply = this.script.shift() ?? { kind: "accept" };
    if (reply.kind === "drop") throw new SmtpFailure("Connection closed unexpectedly", 0, false, false, this.route);
    if (reply.kind === "reject") throw new SmtpFailure(`${reply.code} rejected`, reply.code, reply.aboutRecipient ?? true, false, this.route);
    this.sent.push(mail);
    return { code: 250, response: "250 2.0.0 queued", ...(this.route ? { route: this.route } : {}) };
  }

  async close(): Promise<void> {}
}

/** PacingRepository in memory (one process); the KV adapter is tested against a real server. */
export class MemoryPacing implements PacingRepository {
  private readonly paused = new Set<string>();
  private readonly rates = new Map<string, number>();
  private readonly buckets = new Map<string, BucketState>();

  constructor(private readonly now: () => number = Date.now) {}

  isPaused(id: string) {
    return this.paused.has(id);
  }
  async setPaused(id: string, paused: boolean) {
    if (paused) this.paused.add(id);
    else this.paused.delete(id);
  }
  workspaceRate(id: string) {
    return this.rates.get(id) ?? 0;
  }
  async setWorkspaceRate(id: string, mps: number) {
    if (mps > 0) this.rates.set(id, mps);
    else this.rates.delete(id);
  }
  pausedBroadcasts() {
    return [...this.paused].sort();
  }
  workspaceRates() {
    return [...this.rates].map(([workspaceId, messagesPerSecond]) => ({ workspaceId, messagesPerSecond }));
  }
  async takeTokens(key: string, rate: number, burst: number, want: number): Promise<TokenGrant> {
    const t = takeFromBucket(this.buckets.get(key), rate, burst, want, this.now());
    this.buckets.set(key, t.state);
    return { granted: t.granted, waitMs: t.waitMs };
  }
  async close() {}
}

export const silentLogger = pino({ level: "silent" });

export interface TestDelivery {
  deliverer: Deliverer;
  deliveries: StoreDeliveries;
  content: FakeContentSource;
  directory: FakeDirectory;
  events: RecordingEvents;
  retries: RecordingRetries;
  transport: ScriptedTransport;
  pacing: MemoryPacing;
  /** Runs one job as the consumer would, counting deliveries like JetStream. */
  run(job: Job, deliveryCount?: number): ReturnType<Deliverer["handle"]>;
  /** Runs one page job as the consumer would; `beats` counts its in-progress heartbeats. */
  runPage(page: Page, deliveryCount?: number, beats?: { count: number }): ReturnType<Deliverer["handlePage"]>;
}

/** The delivery domain with every port served by an in-memory adapter. */
export async function buildTestDelivery(
  opts: Partial<DelivererOptions> & { relayRate?: number; now?: () => number; metrics?: DeliveryMetrics } = {},
): Promise<TestDelivery> {
  const deliveries = new StoreDeliveries(openMemoryStore());
  await deliveries.init();
  const content = new FakeContentSource();
  const directory = new FakeDirectory();
  const events = new RecordingEvents();
  const retries = new RecordingRetries();
  const transport = new ScriptedTransport();
  const pacing = new MemoryPacing(opts.now);
  const deliverer = new Deliverer(
    {
      deliveries, content, directory, events, retries, transport,
      merger: new RendererMerger(),
      pacer: new Pacer(pacing, { key: "test", rate: opts.relayRate ?? 0 }, opts.now),
      logger: silentLogger,
      now: opts.now,
      metrics: opts.metrics,
    },
    {
      workerId: "worker-a",
      maxAttempts: 3,
      retryBaseMs: 1_000,
      retryMaxMs: 60_000,
      pauseRecheckMs: 5_000,
      claimTtlMs: 30_000,
      secret: "test-secret-test-secret",
      publicUrl: "https://mail.example.test",
      ...opts,
    },
  );
  const ctx = (deliveryCount: number, beats?: { count: number }): JobContext => ({
    deliveryCount,
    working: () => {
      if (beats) beats.count += 1;
    },
  });
  return {
    deliverer, deliveries, content, directory, events, retries, transport, pacing,
    run: (job, n = 1) => deliverer.handle(job, ctx(n)),
    runPage: (page, n = 1, beats) => deliverer.handlePage(page, ctx(n, beats)),
  };
}

/** A page of `count` broadcast recipients (ids `<pageId>_<i>`); override the shared fields. */
export function testPage(count: number, over: Partial<Omit<Page, "jobs">> = {}): Page {
  const pageId = over.pageId ?? `pg_test_${(seq += 1)}`;
  const shared = {
    workspaceId: "ws_test", broadcastId: "cmp_page", contentRef: "broadcast:cmp_page", fromEmail: "news@acme.test", fromName: "Acme", ...over,
  };
  const jobs = Array.from({ length: count }, (_, i) => testJob({
    deliveryId: `${pageId}_${i}`, messageId: `${pageId}_${i}@acme.test`, source: "broadcast", emailId: "",
    workspaceId: shared.workspaceId, broadcastId: shared.broadcastId, contentRef: shared.contentRef,
    fromEmail: shared.fromEmail, fromName: shared.fromName,
    recipient: { email: `${pageId}_${i}@example.test`, contactId: `ctc_${pageId}_${i}`, variables: { firstName: `R${i}` } },
  }));
  return { pageId, ...shared, jobs };
}

let seq = 0;
/** A well-formed job; override any field. */
export function testJob(over: Partial<Job> & { variables?: JsonObject } = {}): Job {
  seq += 1;
  const { variables, ...rest } = over;
  return {
    deliveryId: `dlv_test_${seq}`,
    workspaceId: "ws_test",
    source: "transactional",
    messageId: `msg${seq}@acme.test`,
    emailId: `trs_${seq}`,
    broadcastId: "",
    recipient: { email: `user${seq}@example.test`, contactId: `ctc_${seq}`, variables: variables ?? { firstName: "Ann" } },
    fromEmail: "news@acme.test",
    fromName: "Acme",
    replyTo: "",
    contentRef: "email:trs_content",
    subjectPrefix: "",
    groupBy: "",
    ...rest,
  };
}
