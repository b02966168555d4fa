/**
 * Test helpers: the email service built with its outside world replaced. The store is
 * the real embedded adapter (in memory unless a store is given); the directory, renderer
 * and queue are small in-process fakes that record what they were asked.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { CompiledMessageSchema, ContentKind } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { openMemoryStore } from "../../kit/src/store/open.js";
import type { Store } from "../../kit/src/store/port.js";
import { newId, newMessageId } from "../../kit/src/ids.js";
import type {
  Clock,
  CompileInput,
  DeliveryJobData,
  DeliveryQueue,
  DirectoryRepository,
  RendererRepository,
  SenderCheck,
  TemplateContent,
} from "./domain/ports.js";
import { EmailError } from "./domain/model.js";
import { EmailService } from "./domain/service.js";
import { Scheduler } from "./domain/scheduler.js";
import type { SendDeps } from "./domain/send.js";
import { openRepositories } from "./store.js";

export const silentLogger = { info() {}, warn() {}, error() {}, debug() {} };

export class ManualClock implements Clock {
  constructor(private t = Date.parse("2030-01-15T12:00:00Z")) {}
  now() {
    return new Date(this.t);
  }
  advance(ms: number) {
    this.t += ms;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FakeDirectory implements DirectoryRepository {
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
      throw new EmailError("invalid_from", 400, "not an address", { allowedEmails: this.verifiedEmails, allowedDomains: this.verifiedDomains });
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
export class FakeRenderer implements RendererRepository {
  inputs: CompileInput[] = [];
  /** Html containing this marker is refused as the renderer would refuse bad content. */
  rejectMarker = "<!--reject-->";

  async compile(input: CompileInput): Promise<Uint8Array> {
    this.inputs.push(input);
    if (input.html.includes(this.rejectMarker)) throw new EmailError("invalid_request", 400, "html could not be compiled");
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

export class FakeQueue implements DeliveryQueue {
  jobs: DeliveryJobData[] = [];
  failNext = 0;

  async publish(job: DeliveryJobData): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("nats unavailable");
    }
    this.jobs.push(job);
  }

  /** Publishes per delivery id: what reaches delivery after msgID deduplication is one each. */
  countsById(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const j of this.jobs) counts.set(j.deliveryId, (counts.get(j.deliveryId) ?? 0) + 1);
    return counts;
  }
}

export interface TestWorld {
  store: Store;
  service: EmailService;
  deps: SendDeps;
  directory: FakeDirectory;
  renderer: FakeRenderer;
  queue: FakeQueue;
  clock: ManualClock;
  scheduler(owner?: string): Scheduler;
}

export async function buildTestWorld(opts: { store?: Store; clock?: ManualClock; owner?: string } = {}): Promise<TestWorld> {
  const store = opts.store ?? openMemoryStore();
  const { emails, idempotency } = await openRepositories(store);
  const directory = new FakeDirectory();
  const renderer = new FakeRenderer();
  const queue = new FakeQueue();
  const clock = opts.clock ?? new ManualClock();
  const deps: SendDeps = {
    emails,
    idempotency,
    directory,
    renderer,
    queue,
    clock,
    logger: silentLogger,
    ids: { emailId: () => newId("trs"), messageId: newMessageId },
    owner: opts.owner ?? "test-process",
  };
  return {
    store,
    service: new EmailService(deps),
    deps,
    directory,
    renderer,
    queue,
    clock,
    scheduler: (owner = opts.owner ?? "test-process") => new Scheduler(emails, queue, clock, silentLogger, { owner, intervalMs: 10 }),
  };
}
