/**
 * Test helpers: the broadcast domain built with its outside world replaced. The store is
 * the real embedded adapter (in memory unless one is given); the directory (the accounts and
 * audience units), renderer and queue are small in-process fakes that record what they were
 * asked.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  DeliveryJobSchema,
  DeliveryPageSchema,
  DeliverySource,
  type DeliveryJob,
  type DeliveryPage,
} from "@mailroom/proto/events/v1/events_pb.js";
import { deliveryJobOf, deliveryPageOf } from "@mailroom/pipeline/delivery-jobs.js";
import { MemoryContentStore } from "@mailroom/pipeline/testing.js";
import type { DeliveryJobSpec, DeliveryPageSpec } from "@mailroom/pipeline/work.js";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { newId } from "@mailroom/kit/ids.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { openStores } from "./adapters/store.js";
import { Broadcasts, type CreateInput } from "./domain/broadcasts.js";
import { applyEvent, type BroadcastEvent } from "./domain/outcomes.js";
import type { Broadcast, BroadcastAudience } from "./domain/model.js";
import type {
  BroadcastEvents,
  CompileInput,
  Contact,
  DeliveryContent,
  DeliveryQueue,
  Directory,
  PreviewRecipient,
  Renderer,
  SenderCheck,
  UsageReservation,
  WorkspaceInfo,
} from "./domain/ports.js";
import { Sender, type SenderOptions } from "./domain/sending.js";
import { silentLogger, ManualClock } from "@mailroom/kit/testing.js";
export { silentLogger, ManualClock };



const BUILT_INS = new Set(["firstName", "lastName", "email", "unsubscribeUrl", "manageUrl", "contactId"]);

export class FakeDirectory implements Directory {
  workspaces = new Map<string, WorkspaceInfo>();
  verifiedDomains = ["acme.test"];
  customProperties = ["plan"];
  memberList = ["owner@acme.test"];
  contacts: Array<Contact & { subscribed: boolean }> = [];
  suppressions = new Set<string>();
  limit = 1_000_000;
  used = 0;
  calls: string[] = [];
  /** Every audience counted or streamed, in order. */
  audiences: BroadcastAudience[] = [];
  /** Segments deleted: counting or streaming an audience naming one is audience_not_found. */
  goneSegments = new Set<string>();
  /** subscribedContacts throws before serving the contact at this index (a failure mid-resolution). */
  streamFailsAt: number | undefined;
  /**
   * OPTIMAL: a contact's best hour by contact id, given the window's start (what the
   * audience unit's PlanBestHours answers; absent or undefined: no history). Every call is kept.
   */
  bestHourOf: (contactId: string, windowStart: number) => number | undefined = () => undefined;
  bestHourCalls: { windowStart: number; contacts: string[] }[] = [];

  constructor() {
    this.setWorkspace("ws_acme", {});
  }

  setWorkspace(id: string, over: Partial<WorkspaceInfo>) {
    this.workspaces.set(id, {
      id,
      timezone: "UTC",
      broadcastEarlyAccess: true,
      emailApiAddon: true,
      verified: true,
      sendingAccountNew: false,
      ...this.workspaces.get(id),
      ...over,
    });
  }

  /** Adds `n` subscribed contacts named c<i>@example.test (ids in order). */
  addContacts(n: number, extra: (i: number) => Partial<Contact & { subscribed: boolean }> = () => ({})) {
    const start = this.contacts.length;
    for (let i = start; i < start + n; i++) {
      this.contacts.push({
        id: `ctc_${String(i).padStart(26, "0")}`,
        email: `c${i}@example.test`,
        firstName: `First${i}`,
        lastName: "",
        timezone: "",
        properties: { plan: "pro" },
        subscribed: true,
        ...extra(i),
      });
    }
  }

  async workspace(workspaceId: string) {
    this.calls.push("workspace");
    const ws = this.workspaces.get(workspaceId);
    if (!ws) throw badRequest("workspace_not_found", "no such workspace");
    return ws;
  }

  async checkSender(_ws: string, from: string): Promise<SenderCheck> {
    this.calls.push("checkSender");
    const allowed = this.verifiedDomains.includes(from.slice(from.lastIndexOf("@") + 1).toLowerCase());
    return { allowed, allowedEmails: allowed ? [] : ["founder@gmail.test"], allowedDomains: allowed ? [] : this.verifiedDomains };
  }

  async customPropertySlugs() {
    return this.customProperties;
  }

  async members() {
    return this.memberList;
  }

  async contactByEmail(_ws: string, email: string) {
    return this.contacts.find((c) => c.email.toLowerCase() === email.toLowerCase()) ?? null;
  }

  async *subscribedContacts(_ws: string, audience: BroadcastAudience, afterId?: string): AsyncIterable<Contact[]> {
    this.calls.push(`stream after ${afterId ?? "-"}`);
    this.audiences.push(audience);
    if (audience.segmentId && this.goneSegments.has(audience.segmentId)) throw badRequest("audience_not_found", `segmentId: segment "${audience.segmentId}" not found`);
    const all = this.contacts.filter((c) => c.subscribed && (!afterId || c.id > afterId));
    for (let i = 0; i < all.length; i += 250) {
      const batch = all.slice(i, i + 250);
      const failAt = this.streamFailsAt === undefined ? undefined : this.contacts[this.streamFailsAt]?.id;
      if (failAt && batch.some((c) => c.id >= failAt)) throw new Error("audience unit went away");
      yield batch.map(({ subscribed: _s, ...c }) => c);
    }
  }

  async bestHours(_ws: string, windowStart: Date, _tz: string, contacts: { id: string; timezone: string }[]) {
    this.bestHourCalls.push({ windowStart: windowStart.getTime(), contacts: contacts.map((c) => c.id) });
    return contacts.map((c) => this.bestHourOf(c.id, windowStart.getTime()));
  }

  async suppressed(_ws: string, emails: string[]) {
    return new Set(emails.map((e) => e.toLowerCase()).filter((e) => this.suppressions.has(e)));
  }

  async audienceCount(_ws: string, audience: BroadcastAudience) {
    this.calls.push("count");
    this.audiences.push(audience);
    // The audience unit's refusal of an audience naming what does not exist (segments "seg_gone…").
    if (audience.segmentId && (audience.segmentId.startsWith("seg_gone") || this.goneSegments.has(audience.segmentId))) throw badRequest("audience_not_found", `segmentId: segment "${audience.segmentId}" not found`);
    return this.contacts.filter((c) => c.subscribed).length;
  }

  async usageLeft() {
    return this.limit - this.used;
  }

  async reserveSendable(_ws: string, emails: string[]): Promise<UsageReservation> {
    this.calls.push(`reserve ${emails.length}`);
    const suppressed = emails.map((e) => e.toLowerCase()).filter((e) => this.suppressions.has(e));
    const count = emails.length - suppressed.length;
    if (this.used + count > this.limit) return { granted: false, reserved: 0, suppressed, period: "2030-01" };
    this.used += count;
    return { granted: true, reserved: count, suppressed, period: "2030-01" };
  }

  async releaseUsage(_ws: string, count: number) {
    this.calls.push(`release ${count}`);
    this.used -= count;
  }
}

const literal = (value: string) => ({ segments: [{ part: { case: "literal" as const, value } }] });

/** Detects {{names}} the way the renderer does; compiles to a literal CompiledMessage of its input. */
export class FakeRenderer implements Renderer {
  compiled: CompileInput[] = [];

  async detectVariables(input: { html: string; subject: string; previewText: string; customProperties: string[] }) {
    const detected = [...new Set([...`${input.html} ${input.subject} ${input.previewText}`.matchAll(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g)].map((m) => m[1]))];
    const known = new Set([...BUILT_INS, ...input.customProperties]);
    return { detected, unknown: detected.filter((v) => !known.has(v)) };
  }

  rendered: Array<{ input: CompileInput; recipient: PreviewRecipient }> = [];

  async render(input: CompileInput, recipient: PreviewRecipient) {
    this.rendered.push({ input, recipient });
    return {
      subject: fakeMerge(input.subject, recipient),
      html: fakeMerge(input.html, recipient),
      text: fakeMerge(input.text, recipient),
      previewText: fakeMerge(input.previewText, recipient),
    };
  }

  async compile(input: CompileInput): Promise<Uint8Array> {
    this.compiled.push(input);
    return toBinary(
      CompiledMessageSchema,
      create(CompiledMessageSchema, {
        subject: literal(input.subject),
        html: literal(input.html),
        text: literal(input.text),
        previewText: literal(input.previewText),
        trackClicks: input.trackClicks,
        trackOpens: input.trackOpens,
        kind: ContentKind.BROADCAST,
        contentId: input.contentId,
        workspaceId: input.workspaceId,
      }),
    );
  }
}

/** Merges `{{name}}` from the recipient's variables (and email), empty when missing, like the renderer. */
function fakeMerge(template: string, recipient: PreviewRecipient): string {
  const values: Record<string, unknown> = { ...recipient.variables, email: recipient.email, contactId: recipient.contactId };
  return template.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_m, name: string) => String(values[name] ?? ""));
}

/** One recipient's delivery as tests read it, from a page job or a single (test) job. */
export interface JobView {
  deliveryId: string;
  broadcastId: string;
  messageId: string;
  /** A test send (source BROADCAST_TEST). */
  test: boolean;
  recipient: { email: string; contactId: string; variables: Record<string, unknown> };
  fromEmail: string;
  fromName: string;
  replyTo: string[];
  contentRef: string;
  subjectPrefix: string;
  /** The page job it came in ("" for a single job). */
  pageId: string;
}

const decoder = new TextDecoder();
const parseVariables = (json: Uint8Array): Record<string, unknown> => (json.length ? (JSON.parse(decoder.decode(json)) as Record<string, unknown>) : {});

/**
 * Records what was published, through the wire format as delivery decodes it, in order
 * (pages and single jobs), on a log shared with the fake content store.
 */
export class FakeQueue implements DeliveryQueue {
  published: Array<{ page: DeliveryPage } | { job: DeliveryJob }> = [];
  failNext = 0;

  constructor(readonly log: string[] = []) {}

  private fail() {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("nats unavailable");
    }
  }

  async publishPage(spec: DeliveryPageSpec): Promise<void> {
    this.fail();
    const page = fromBinary(DeliveryPageSchema, toBinary(DeliveryPageSchema, deliveryPageOf(spec)));
    this.published.push({ page });
    this.log.push(`page ${page.contentRef} ${page.pageId}`);
  }

  async publishJob(spec: DeliveryJobSpec): Promise<void> {
    this.fail();
    const job = fromBinary(DeliveryJobSchema, toBinary(DeliveryJobSchema, deliveryJobOf(spec)));
    this.published.push({ job });
    this.log.push(`job ${job.contentRef}`);
  }

  /** The page jobs published, in order (repeats included: msgID deduplication is the stream's). */
  get pages(): DeliveryPage[] {
    return this.published.flatMap((p) => ("page" in p ? [p.page] : []));
  }

  /** Every recipient of every publish, in order. */
  get jobs(): JobView[] {
    return this.published.flatMap((p): JobView[] => {
      if ("page" in p) {
        const g = p.page;
        return g.recipients.map((r) => ({
          deliveryId: r.deliveryId,
          broadcastId: g.broadcastId,
          messageId: r.messageId,
          test: g.source === DeliverySource.BROADCAST_TEST,
          recipient: { email: r.email, contactId: r.contactId, variables: parseVariables(r.variablesJson) },
          fromEmail: g.fromEmail,
          fromName: g.fromName,
          replyTo: g.replyToList,
          contentRef: g.contentRef,
          subjectPrefix: g.subjectPrefix,
          pageId: g.pageId,
        }));
      }
      const j = p.job;
      return [{
        deliveryId: j.deliveryId,
        broadcastId: j.broadcastId,
        messageId: j.messageId,
        test: j.source === DeliverySource.BROADCAST_TEST,
        recipient: { email: j.recipient?.email ?? "", contactId: j.recipient?.contactId ?? "", variables: parseVariables(j.recipient?.variablesJson ?? new Uint8Array()) },
        fromEmail: j.fromEmail,
        fromName: j.fromName,
        replyTo: j.replyToList,
        contentRef: j.contentRef,
        subjectPrefix: j.subjectPrefix,
        pageId: "",
      }];
    });
  }

  /** Distinct delivery ids: what reaches delivery after msgID deduplication. */
  distinct(filter: (j: JobView) => boolean = () => true): Set<string> {
    return new Set(this.jobs.filter(filter).map((j) => j.deliveryId));
  }
}

/** The content store in memory, logging puts and deletes on the log the queue shares. */
export class FakeContentStore extends MemoryContentStore<Uint8Array> implements DeliveryContent {}

/** BROADCAST_STARTED / BROADCAST_COMPLETED as published, in order; `failures` makes the next publishes throw. */
export class FakeBroadcastEvents implements BroadcastEvents {
  readonly published: Array<{ type: "started" | "completed"; broadcast: Broadcast }> = [];
  failures = 0;

  async started(broadcast: Broadcast): Promise<void> {
    this.record("started", broadcast);
  }

  async completed(broadcast: Broadcast): Promise<void> {
    this.record("completed", broadcast);
  }

  private record(type: "started" | "completed", broadcast: Broadcast) {
    if (this.failures > 0) {
      this.failures--;
      throw new Error("publish failed");
    }
    this.published.push({ type, broadcast: structuredClone(broadcast) });
  }
}

export type TestWorld = Awaited<ReturnType<typeof buildTestWorld>>;

export async function buildTestWorld(opts: { store?: Store; clock?: ManualClock; directory?: FakeDirectory; sender?: Partial<SenderOptions> } = {}) {
  const store = opts.store ?? openMemoryStore();
  const repos = await openStores(store);
  const directory = opts.directory ?? new FakeDirectory();
  const renderer = new FakeRenderer();
  const log: string[] = [];
  const queue = new FakeQueue(log);
  const content = new FakeContentStore(log);
  const clock = opts.clock ?? new ManualClock();
  const service = new Broadcasts({
    ...repos,
    directory,
    renderer,
    queue,
    deliveryContent: content,
    timeline: repos.timeline,
    clock,
    logger: silentLogger,
    ids: { broadcastId: () => newId("cmp"), unique: () => newId("v").slice(2), messageId: (d) => `${newId("m").slice(2)}@${d}` },
  });
  const events = new FakeBroadcastEvents();
  const sender = (owner = "test-process", more: Partial<SenderOptions> = {}) =>
    new Sender({ ...repos, directory, queue, deliveryContent: content, clock, logger: silentLogger, events }, { owner, ...opts.sender, ...more });
  const outcomeDeps = { broadcasts: repos.broadcasts, pages: repos.pages, ledger: repos.ledger, timeline: repos.timeline, deliveryContent: content, clock, logger: silentLogger, events };
  return {
    store,
    repos,
    service,
    directory,
    renderer,
    queue,
    content,
    /** BROADCAST_STARTED / BROADCAST_COMPLETED as published. */
    events,
    /** Content puts and deletes, page and job publishes, in the order they happened. */
    log,
    clock,
    sender,
    /** Feeds a delivery outcome or tracking event as the events consumer would. */
    event: (e: Partial<BroadcastEvent> & Pick<BroadcastEvent, "kind" | "broadcastId">) =>
      applyEvent(outcomeDeps, { deliveryId: "", contactId: "", messageId: "", ...e }),
    /** Reports `kind` for every job published so far for the broadcast (as delivery would). */
    async settleAll(broadcastId: string, kind: BroadcastEvent["kind"] = "sent") {
      for (const id of new Set(queue.jobs.filter((j) => j.broadcastId === broadcastId && !j.test).map((j) => j.deliveryId))) {
        await applyEvent(outcomeDeps, { kind, broadcastId, deliveryId: id, contactId: "", messageId: "" });
      }
    },
  };
}

export const draft = (over: Partial<CreateInput> = {}): CreateInput => ({
  name: "Spring news",
  subject: "Hello {{firstName}}",
  fromEmail: "news@acme.test",
  fromName: "Acme",
  html: "<p>Hi {{firstName}}, you are on {{plan}}.</p>",
  audience: { all: true },
  ...over,
});
