/**
 * Test helpers: the email domain built with in-memory adapters. The store is the real
 * store adapter over the embedded engine (in memory unless a store is given); the
 * directory, renderer and queue are small in-process fakes that record what they were asked.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { CompiledMessageSchema, ContentKind } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { newId, newMessageId } from "@mailroom/kit/ids.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { DeliveryJobSchema, type DeliveryJob } from "@mailroom/proto/events/v1/events_pb.js";
import { deliveryJobOf } from "@mailroom/pipeline/delivery-jobs.js";
import type { DeliveryJobSpec } from "@mailroom/pipeline/work.js";
import { MemoryContentStore } from "@mailroom/pipeline/testing.js";
import type {
  CompileInput,
  ContentWriter,
  DeliveryQueue,
  Directory,
  Renderer,
  SenderCheck,
  TemplateContent,
} from "./domain/ports.js";
import type { CompiledContent, ContentExtras } from "./domain/model.js";
import { Emails } from "./domain/service.js";
import { Scheduler } from "./domain/scheduler.js";
import type { EmailsDeps } from "./domain/service.js";
import type { OutcomeDeps } from "./domain/outcomes.js";
import { openStores } from "./adapters/store.js";
import { silentLogger, ManualClock } from "@mailroom/kit/testing.js";
export { silentLogger, ManualClock };



const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FakeDirectory implements Directory {
  verifiedEmails = ["founder@gmail.test"];
  verifiedDomains = ["acme.test"];
  templates = new Map<string, TemplateContent>();
  suppressions = new Map<string, string>();
  limit = 1_000;
  used = 0;
  /** Delay added to every call, to make requests overlap. */
  delayMs = 0;
  /** Make the next calls of a method throw. */
  failing = new Set<string>();
  calls: Array<{ method: string; args: unknown[] }> = [];
  upserts: Array<{ workspaceId: string; email: string; properties: Record<string, unknown> }> = [];

  private async enter(method: string, args: unknown[]) {
    this.calls.push({ method, args });
    if (this.delayMs) await sleep(this.delayMs);
    if (this.failing.has(method)) throw new Error(`${method} unavailable`);
  }

  count(method: string) {
    return this.calls.filter((c) => c.method === method).length;
  }

  async checkSender(workspaceId: string, from: string): Promise<SenderCheck> {
    await this.enter("checkSender", [workspaceId, from]);
    const m = /^\s*(?:"?([^"<]*?)"?\s*<)?([^<>\s]+@([^<>\s]+?))>?\s*$/.exec(from);
    if (!m) {
      throw badRequest("invalid_from", "not an address", { allowedEmails: this.verifiedEmails, allowedDomains: this.verifiedDomains });
    }
    const address = m[2];
    const allowed = this.verifiedEmails.includes(address) || this.verifiedDomains.includes(m[3].toLowerCase());
    return {
      allowed,
      address,
      name: m[1]?.trim() ?? "",
      allowedEmails: allowed ? [] : this.verifiedEmails,
      allowedDomains: allowed ? [] : this.verifiedDomains,
    };
  }

  async verifiedSenders(workspaceId: string) {
    await this.enter("verifiedSenders", [workspaceId]);
    return { emails: this.verifiedEmails, domains: this.verifiedDomains };
  }

  async getTemplate(workspaceId: string, name: string) {
    await this.enter("getTemplate", [workspaceId, name]);
    return this.templates.get(name) ?? null;
  }

  async reserveSendable(workspaceId: string, recipients: string[]) {
    await this.enter("reserveSendable", [workspaceId, recipients]);
    const suppressed = new Map<string, string>();
    for (const r of recipients) if (this.suppressions.has(r)) suppressed.set(r, this.suppressions.get(r)!);
    const count = recipients.filter((r) => !suppressed.has(r)).length;
    if (count === 0) return { suppressed, granted: true, reserved: 0, period: "" };
    if (this.used + count > this.limit) return { suppressed, granted: false, reserved: 0, period: "2030-01", used: this.used, limit: this.limit };
    this.used += count;
    return { suppressed, granted: true, reserved: count, period: "2030-01", used: this.used, limit: this.limit };
  }

  async releaseUsage(workspaceId: string, count: number, period: string) {
    await this.enter("releaseUsage", [workspaceId, count, period]);
    this.used -= count;
  }

  async upsertContact(workspaceId: string, email: string, properties: Record<string, unknown>) {
    await this.enter("upsertContact", [workspaceId, email, properties]);
    this.upserts.push({ workspaceId, email, properties });
  }
}

const literal = (value: string) => ({ segments: [{ part: { case: "literal" as const, value } }] });

/** Compiles to a literal CompiledMessage of its input; `inputs` shows what was compiled. */
export class FakeRenderer implements Renderer {
  inputs: CompileInput[] = [];
  /** Html containing this marker is refused as the renderer would refuse bad content. */
  rejectMarker = "<!--reject-->";

  async compile(input: CompileInput): Promise<CompiledContent> {
    this.inputs.push(input);
    if (input.html.includes(this.rejectMarker)) throw badRequest("invalid_request", "html could not be compiled");
    return toBinary(
      CompiledMessageSchema,
      create(CompiledMessageSchema, {
        subject: literal(input.subject),
        html: literal(input.html),
        text: literal(input.text),
        previewText: literal(input.previewText),
        trackClicks: input.trackClicks,
        trackOpens: input.trackOpens,
        kind: ContentKind.TRANSACTIONAL,
        contentId: input.contentId,
        workspaceId: input.workspaceId,
      }),
    );
  }
}

/** The CompiledMessage inside the domain's opaque compiled content, for assertions. */
export const decodeCompiled = (compiled: CompiledContent) => fromBinary(CompiledMessageSchema, compiled);

/** A published job as tests read it: the job's fields, merge values parsed, Reply-To as a list (absent when none). */
export interface JobView {
  deliveryId: string;
  workspaceId: string;
  emailId: string;
  messageId: string;
  recipient: string;
  variables: Record<string, unknown>;
  fromEmail: string;
  fromName: string;
  replyTo?: string[];
  groupBy?: string;
  contentRef: string;
  requestId: string;
  cc: string[];
  bcc: string[];
  tags: Array<{ name: string; value: string }>;
}

const decoder = new TextDecoder();

/** Records what was published (as the publisher encodes it), in order, on a log shared with the content store. */
export class FakeQueue implements DeliveryQueue {
  /** The jobs as published (DeliveryJob messages, as delivery decodes them). */
  published: DeliveryJob[] = [];
  failNext = 0;

  constructor(private readonly log: string[] = []) {}

  async publishJob(spec: DeliveryJobSpec): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("nats unavailable");
    }
    const job = deliveryJobOf(spec);
    // Through the wire format, as delivery will read it.
    this.published.push(fromBinary(DeliveryJobSchema, toBinary(DeliveryJobSchema, job)));
    this.log.push(`job ${job.contentRef}`);
  }

  get jobs(): JobView[] {
    return this.published.map((j) => ({
      deliveryId: j.deliveryId,
      workspaceId: j.workspaceId,
      emailId: j.emailId,
      messageId: j.messageId,
      recipient: j.recipient?.email ?? "",
      variables: j.recipient?.variablesJson.length ? (JSON.parse(decoder.decode(j.recipient.variablesJson)) as Record<string, unknown>) : {},
      fromEmail: j.fromEmail,
      fromName: j.fromName,
      replyTo: j.replyToList.length ? j.replyToList : undefined,
      groupBy: j.groupBy || undefined,
      contentRef: j.contentRef,
      requestId: j.requestId,
      cc: j.cc,
      bcc: j.bcc,
      tags: j.tags.map((t) => ({ name: t.name, value: t.value })),
    }));
  }

  /** Publishes per delivery id: what reaches delivery after msgID deduplication is one each. */
  countsById(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const j of this.published) counts.set(j.deliveryId, (counts.get(j.deliveryId) ?? 0) + 1);
    return counts;
  }
}

/** The content store in memory: entries by `<workspace> <ref>`, and every put and job in one ordered log. */
export class FakeContentStore extends MemoryContentStore<CompiledContent> implements ContentWriter {
  /** What each entry carries beside its compiled content (Cc, headers, attachments), by `<workspace> <ref>`. */
  extras = new Map<string, ContentExtras>();

  override async put(workspaceId: string, contentRef: string, compiled: CompiledContent, extras?: ContentExtras): Promise<void> {
    await super.put(workspaceId, contentRef, compiled);
    if (extras) this.extras.set(`${workspaceId} ${contentRef}`, extras);
    else this.extras.delete(`${workspaceId} ${contentRef}`);
  }

  override async delete(workspaceId: string, contentRef: string): Promise<void> {
    await super.delete(workspaceId, contentRef);
    this.extras.delete(`${workspaceId} ${contentRef}`);
  }

  /** Content up to this many bytes (compiled, without extras) rides in the job; 0 (the default) stores everything. */
  inlineBytes = 0;

  async place(workspaceId: string, contentRef: string, compiled: CompiledContent, extras?: ContentExtras): Promise<Uint8Array | undefined> {
    if (!extras && compiled.length <= this.inlineBytes) {
      this.log.push(`inline ${contentRef}`);
      return compiled;
    }
    await this.put(workspaceId, contentRef, compiled, extras);
    return undefined;
  }
}

export interface TestWorld {
  store: Store;
  service: Emails;
  deps: EmailsDeps;
  /** What the event consumer records outcomes with. */
  outcomeDeps: OutcomeDeps;
  directory: FakeDirectory;
  renderer: FakeRenderer;
  queue: FakeQueue;
  content: FakeContentStore;
  /** Content puts and job publishes in the order they happened. */
  log: string[];
  clock: ManualClock;
  scheduler(owner?: string): Scheduler;
}

export async function buildTestWorld(opts: { store?: Store; clock?: ManualClock; owner?: string } = {}): Promise<TestWorld> {
  const store = opts.store ?? openMemoryStore();
  const { emails, idempotency, outcomes, stats } = await openStores(store);
  const directory = new FakeDirectory();
  const renderer = new FakeRenderer();
  const log: string[] = [];
  const queue = new FakeQueue(log);
  const content = new FakeContentStore(log);
  const clock = opts.clock ?? new ManualClock();
  const deps: EmailsDeps = {
    emails,
    idempotency,
    stats,
    directory,
    renderer,
    queue,
    content,
    clock,
    logger: silentLogger,
    ids: { emailId: () => newId("trs"), messageId: newMessageId },
    owner: opts.owner ?? "test-process",
  };
  return {
    store,
    service: new Emails(deps),
    deps,
    outcomeDeps: { emails, outcomes, stats, clock },
    directory,
    renderer,
    queue,
    content,
    log,
    clock,
    scheduler: (owner = opts.owner ?? "test-process") => new Scheduler(emails, queue, content, clock, silentLogger, { owner, intervalMs: 10 }),
  };
}
