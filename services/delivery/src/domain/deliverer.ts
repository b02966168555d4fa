import type { Logger } from "@mailroom/kit/logger.js";
import type { Job, Page } from "./job.js";
import { invalidJobReason } from "./job.js";
import { buildForwardedMail, buildMail, contentVersionOf } from "./message.js";
import { classifySmtpError, clip, retryDelayMs } from "./outcome.js";
import type { Pacer } from "./pacer.js";
import {
  PermanentError,
  SmtpFailure,
  type ContentMerger,
  type ContentSource,
  type DeliveriesRepository,
  type DeliveryMetrics,
  type DeliveryRecord,
  type EventPublisher,
  type MailTransport,
  type Outcome,
  type CompiledContent,
  type OutgoingMail,
  type RetryQueue,
  type SendResult,
  type SenderCheck,
  type SenderDirectory,
} from "./ports.js";

/** What to do with the job's message: done, look again later, or give it up. */
export type Decision = { kind: "ack" } | { kind: "retry"; delayMs: number } | { kind: "drop"; reason: string };

export interface JobContext {
  /** 1 on first delivery; JetStream counts naks too. */
  deliveryCount: number;
  /** Tells the queue the job is still being worked on (extends its ack deadline). */
  working(): void;
}

export interface DelivererOptions {
  /** Identifies this process in claims. */
  workerId: string;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  pauseRecheckMs: number;
  /** A claim older than this belongs to a dead worker (= the queue's ack wait). */
  claimTtlMs: number;
  /** Longest rate-limit wait spent in process; longer ones go back to the queue. */
  maxInlineWaitMs?: number;
  /** The same for a page's recipient (default 30 s); longer ones are handed on as jobs of their own. */
  pageInlineWaitMs?: number;
  /** Recipients of one page handled at once (default 10). */
  pageConcurrency?: number;
  secret: string;
  publicUrl: string;
  /** MAILROOM_BOUNCE_DOMAIN; unset: each sender's `bounces.<domain>`. */
  bounceDomain?: string;
}

export interface DelivererDeps {
  deliveries: DeliveriesRepository;
  content: ContentSource;
  merger: ContentMerger;
  directory: SenderDirectory;
  transport: MailTransport;
  events: EventPublisher;
  /** Where a page's recipient to retry goes as a job of its own. */
  retries: RetryQueue;
  pacer: Pacer;
  logger: Logger;
  metrics?: DeliveryMetrics;
  now?: () => number;
}

/** The lane a job travels on (DESIGN §3): broadcasts apart from everything else. */
const laneOf = (job: Job) => (job.source === "broadcast" ? "broadcast" : "transactional");

export interface DeliveryCounters {
  inFlight: number;
  sent: number;
  deferred: number;
  bounced: number;
  failed: number;
}

const TERMINAL = new Set(["sent", "bounced", "failed"]);

/** What one recipient came to: a decision, or (a page's recipient) the broadcast is paused. */
type Step = Decision | { kind: "paused" };
const ACK: Decision = { kind: "ack" };
const PAUSED: Step = { kind: "paused" };

/** Content and sender, loaded once for a page; `error` when they can never be (every recipient fails). */
type Shared = { sender: SenderCheck; compiled: CompiledContent; error?: undefined } | { error: unknown; sender?: undefined; compiled?: undefined };

interface Mode {
  /** A page's recipient: a pause stops the page, a retry becomes a job of its own. */
  page?: boolean;
  shared?: Shared;
  /** The recipient's ledger record read with its page (null: none); undefined: not read. */
  known?: DeliveryRecord | null;
  /** Takes the final writes off the recipient's slot (the page awaits them before its ack). */
  track?: (p: Promise<void>) => void;
}

const SINGLE: Mode = {};

/** The outcome with the route that carried it, when the transport named one. */
function withRoute(outcome: Outcome, route: string | undefined): Outcome {
  return route ? { ...outcome, route } : outcome;
}

/** The recipient's domain, lowercased (metrics label). */
function domainOf(address: string): string {
  const at = address.lastIndexOf("@");
  return at < 0 ? "" : address.slice(at + 1).toLowerCase();
}

function fromOf(m: { fromName: string; fromEmail: string }): string {
  return m.fromName ? `"${m.fromName.replace(/["\\]/g, "")}" <${m.fromEmail}>` : m.fromEmail;
}

/**
 * Sends one delivery job, at most once as far as SMTP allows: the delivery is claimed
 * with a compare-and-set right before the SMTP transaction and marked right after it,
 * and a job whose delivery is already final is acknowledged without sending.
 */
export class Deliverer {
  readonly counters: DeliveryCounters = { inFlight: 0, sent: 0, deferred: 0, bounced: 0, failed: 0 };
  private readonly now: () => number;
  /**
   * Outcomes of SMTP transactions whose store write or event publish failed afterwards:
   * the retry finishes the bookkeeping instead of sending again.
   */
  private readonly unsettled = new Map<string, Outcome>();
  private readonly working = new Set<JobContext>();
  /** Deliveries this worker claimed whose outcome is not written yet: the heartbeat keeps their claims fresh. */
  private readonly claimedHere = new Set<string>();
  private ticker?: NodeJS.Timeout;

  constructor(
    private readonly deps: DelivererDeps,
    private readonly opts: DelivererOptions,
  ) {
    this.now = deps.now ?? Date.now;
  }

  async handle(job: Job, ctx: JobContext): Promise<Decision> {
    this.counters.inFlight += 1;
    this.beat(ctx);
    try {
      // A page's recipient retried after a deferral: not before its time.
      if (job.notBefore !== undefined) {
        const early = job.notBefore - this.now();
        if (early > 0) return { kind: "retry", delayMs: early };
      }
      return (await this.deliver(job, ctx, SINGLE)) as Decision;
    } finally {
      this.working.delete(ctx);
      this.counters.inFlight -= 1;
    }
  }

  /**
   * A page of a broadcast's recipients: a paused broadcast's page goes back whole, nothing
   * sent; otherwise content and sender are loaded once and every recipient goes through
   * the same steps as a single job, `pageConcurrency` at once. A recipient to retry is
   * handed on as a job of its own; the page is done (acked) once every recipient reached a
   * final outcome or was handed on. A redelivered page reads its recipients' ledger in one
   * round and never sends again to those already final.
   */
  async handlePage(page: Page, ctx: JobContext): Promise<Decision> {
    this.counters.inFlight += 1;
    this.beat(ctx);
    try {
      return await this.deliverPage(page, ctx);
    } finally {
      this.working.delete(ctx);
      this.counters.inFlight -= 1;
    }
  }

  private async deliverPage(page: Page, ctx: JobContext): Promise<Decision> {
    if (this.deps.pacer.isPaused(page.broadcastId)) return { kind: "retry", delayMs: this.opts.pauseRecheckMs };
    const { jobs } = page;
    if (jobs.length === 0) return { kind: "ack" };

    let known: Map<string, DeliveryRecord> | undefined;
    if (ctx.deliveryCount > 1) known = await this.deps.deliveries.getMany(jobs.map((j) => j.deliveryId));

    // Content and sender once for the page (the content cache and sender cache would answer
    // every recipient anyway, at a promise and a lookup each).
    let shared: Shared;
    try {
      shared = await this.load(page.workspaceId, fromOf(page), page.contentRef);
    } catch (err) {
      if (!(err instanceof PermanentError)) {
        const delayMs = retryDelayMs(ctx.deliveryCount, Math.min(1_000, this.opts.retryBaseMs), this.opts.retryMaxMs);
        this.deps.logger.warn({ err, pageId: page.pageId, delayMs }, "could not load the page's content or sender; retrying the page");
        return { kind: "retry", delayMs };
      }
      shared = { error: err };
    }

    const settling: Promise<void>[] = [];
    const errors: unknown[] = [];
    // Writes and publishes run behind the sends; a failure fails the page (redelivered, the ledger settles it).
    const track = (p: Promise<void>) => {
      settling.push(p.catch((err: unknown) => void errors.push(err)));
    };
    const mode: Mode = { page: true, shared, track };
    let paused = false;
    let next = 0;
    const worker = async () => {
      while (!paused && errors.length === 0 && next < jobs.length) {
        const job = jobs[next++];
        mode.known = known ? (known.get(job.deliveryId) ?? null) : undefined;
        const step = await this.deliver(job, ctx, { ...mode });
        if (step.kind === "paused") paused = true;
        else if (step.kind === "retry") track(this.deps.retries.handOn(job, this.now() + step.delayMs));
      }
    };
    const width = Math.min(jobs.length, Math.max(1, this.opts.pageConcurrency ?? 10));
    const workers: Promise<void>[] = [];
    for (let i = 0; i < width; i++) workers.push(worker());
    await Promise.all(workers);
    await Promise.all(settling);
    if (errors.length > 0) throw errors[0];
    // Paused mid-page: what was done stays done (the ledger), the rest waits with the page.
    if (paused) return { kind: "retry", delayMs: this.opts.pauseRecheckMs };
    return { kind: "ack" };
  }

  /** One recipient: the same steps for a single job and for a page's recipient. */
  private async deliver(job: Job, ctx: JobContext, mode: Mode): Promise<Step> {
    const { deliveries, pacer } = this.deps;
    const invalid = invalidJobReason(job);
    if (invalid) {
      this.deps.logger.warn({ deliveryId: job.deliveryId, reason: invalid }, "invalid delivery job dropped");
      if (/^[A-Za-z0-9_.:@+\-]{1,200}$/.test(job.deliveryId) && job.workspaceId) {
        await this.fail(job, `invalid job: ${invalid}`);
      }
      return { kind: "drop", reason: invalid };
    }

    const unsettled = this.unsettled.get(job.deliveryId);
    if (unsettled) {
      await this.finish(job, unsettled);
      this.unsettled.delete(job.deliveryId);
      return ACK;
    }
    // A redelivery may be for a delivery that already ended: never send it again.
    const existing = mode.known !== undefined ? mode.known : ctx.deliveryCount > 1 ? await deliveries.get(job.deliveryId) : null;
    if (existing && TERMINAL.has(existing.state)) return this.settleFinished(job, existing);
    if (mode.page && existing?.state === "deferred") {
      // Deferred by an earlier delivery of this page and handed on then: hand it on again
      // (the same msgID, deduplicated), never send it from the page.
      const due = existing.updatedAt.getTime() + retryDelayMs(existing.attempts, this.opts.retryBaseMs, this.opts.retryMaxMs);
      return { kind: "retry", delayMs: Math.max(0, due - this.now()) };
    }

    if (job.source === "broadcast" && pacer.isPaused(job.broadcastId)) {
      return mode.page ? PAUSED : { kind: "retry", delayMs: this.opts.pauseRecheckMs };
    }
    const wait = await this.waitForToken(job.workspaceId, ctx, mode.page ? (this.opts.pageInlineWaitMs ?? 30_000) : (this.opts.maxInlineWaitMs ?? 2_000));
    if (wait > 0) return { kind: "retry", delayMs: wait };

    let mail;
    try {
      mail = await this.prepare(job, mode.shared);
    } catch (err) {
      if (err instanceof PermanentError) {
        await this.fail(job, clip(err.message));
        return ACK;
      }
      // Accounts unit (sender check) or content store unreachable: nothing was sent, try again later.
      const delayMs = retryDelayMs(ctx.deliveryCount, Math.min(1_000, this.opts.retryBaseMs), this.opts.retryMaxMs);
      this.deps.logger.warn({ err, deliveryId: job.deliveryId, delayMs }, "could not prepare message; retrying");
      return { kind: "retry", delayMs };
    }
    if (mail === "sender_not_allowed") {
      await this.fail(job, "sender not allowed for this workspace");
      return ACK;
    }

    const now = this.now();
    const claim = await deliveries.claim(
      job.deliveryId, job.workspaceId, this.opts.workerId, new Date(now), new Date(now - this.opts.claimTtlMs),
    );
    if (!claim.claimed) {
      const record = claim.record;
      if (record && TERMINAL.has(record.state)) return this.settleFinished(job, record);
      // Another live worker is inside the SMTP transaction: look again once its claim could expire.
      const claimedAt = record?.claimedAt ? record.claimedAt.getTime() : now;
      return { kind: "retry", delayMs: Math.max(250, claimedAt + this.opts.claimTtlMs - now + 250) };
    }

    const attempt = claim.attempts;
    this.claimedHere.add(job.deliveryId);
    let handedToFinish = false;
    try {
      const { outcome, refused } = await this.transact(mail, attempt, laneOf(job));
      // A cc or bcc address the relay refused for good is suppressed; the outcome follows `to`.
      if (refused.length) await this.suppressOthers(job, refused);
      this.deps.metrics?.outcome(laneOf(job), outcome.type);
      if (outcome.type === "deferred") {
        this.counters.deferred += 1;
        await deliveries.markDeferred(job.deliveryId, this.opts.workerId, outcome, new Date(this.now()));
        await this.deps.events.publish(this.eventOf(job, outcome));
        return { kind: "retry", delayMs: retryDelayMs(attempt, this.opts.retryBaseMs, this.opts.retryMaxMs) };
      }
      this.counters[outcome.type] += 1;
      this.rememberUnsettled(job.deliveryId, outcome);
      // The claim is kept fresh until the outcome is written (finish), even after the page's slot is freed.
      handedToFinish = true;
      const done = this.finish(job, outcome)
        .then(() => void this.unsettled.delete(job.deliveryId))
        .finally(() => this.claimedHere.delete(job.deliveryId));
      // A page's recipient frees its slot for the next send; the page waits for every write.
      if (mode.track) mode.track(done);
      else await done;
      return ACK;
    } finally {
      if (!handedToFinish) this.claimedHere.delete(job.deliveryId);
    }
  }

  /** One SMTP transaction, turned into an outcome (and the other recipients the relay refused). */
  private async transact(mail: OutgoingMail, attempt: number, lane: string): Promise<{ outcome: Outcome; refused: NonNullable<SendResult["refused"]> }> {
    const metrics = this.deps.metrics;
    const sent = metrics?.sendStarted(lane);
    const started = this.now();
    let result: { outcome: Outcome; refused: NonNullable<SendResult["refused"]> };
    try {
      const reply = await this.deps.transport.send(mail);
      result = { outcome: withRoute({ type: "sent", detail: clip(reply.response), smtpCode: reply.code, attempt }, reply.route), refused: reply.refused ?? [] };
    } catch (err) {
      const verdict = classifySmtpError(err);
      const route = err instanceof SmtpFailure ? err.route : undefined;
      if (verdict.kind === "permanent") {
        result = { outcome: withRoute({ type: "bounced", detail: verdict.detail, smtpCode: verdict.code, attempt }, route), refused: [] };
      } else if (attempt >= this.opts.maxAttempts) {
        const detail = clip(`gave up after ${attempt} attempts: ${verdict.detail}`);
        result = { outcome: withRoute({ type: "failed", detail, smtpCode: verdict.code, attempt }, route), refused: [] };
      } else {
        result = { outcome: withRoute({ type: "deferred", detail: verdict.detail, smtpCode: verdict.code, attempt }, route), refused: [] };
      }
    } finally {
      sent?.();
    }
    const { outcome } = result;
    // No route named: a transport without routes (tests), or an error that is not an SMTP reply.
    metrics?.routeOutcome?.(outcome.route ?? "unknown", domainOf(mail.envelope.to), outcome.type, (this.now() - started) / 1_000);
    return result;
  }

  /**
   * Cc and bcc addresses refused at RCPT TO while the message went to `to`: a 5xx is a hard
   * bounce of that address, suppressed in the audience unit directly (no event of the email names
   * it: the email's events follow `to`); a 4xx is logged, not retried (the message was
   * accepted, and a retry would send it to `to` again).
   */
  private async suppressOthers(job: Job, refused: NonNullable<SendResult["refused"]>): Promise<void> {
    for (const r of refused) {
      if (r.code >= 500 && r.code < 600) {
        try {
          await this.deps.directory.suppressOther(job.workspaceId, r.address, clip(r.text));
        } catch (err) {
          this.deps.logger.warn({ err, deliveryId: job.deliveryId }, "could not suppress a refused cc/bcc address");
        }
      } else {
        this.deps.logger.warn({ deliveryId: job.deliveryId, code: r.code }, "a cc/bcc recipient was refused for now; the message went to the others");
      }
    }
  }

  /**
   * A job or page being handled tells the queue so every third of the ack wait, for its
   * whole handling (pacing waits, content load, SMTP): a live worker's job is never
   * redelivered, and a dead one's comes back within the ack wait. One shared ticker, not
   * a timer per job.
   */
  private beat(ctx: JobContext): void {
    this.working.add(ctx);
    if (this.ticker) return;
    this.ticker = setInterval(() => {
      for (const c of this.working) c.working();
      // The store's side of the same heartbeat: a claim waiting in the SMTP pool longer than the
      // ack wait must not look like a dead worker's to the process a page was redelivered to.
      if (this.claimedHere.size) {
        this.deps.deliveries.refreshClaims([...this.claimedHere], this.opts.workerId, new Date(this.now()))
          .catch((err) => this.deps.logger.warn({ err }, "could not refresh this worker's delivery claims"));
      }
      if (this.working.size === 0) {
        clearInterval(this.ticker);
        this.ticker = undefined;
      }
    }, Math.max(100, Math.floor(this.opts.claimTtlMs / 3)));
    this.ticker.unref();
  }

  private rememberUnsettled(deliveryId: string, outcome: Outcome): void {
    if (this.unsettled.size >= 10_000) this.unsettled.delete(this.unsettled.keys().next().value as string);
    this.unsettled.set(deliveryId, outcome);
  }

  /** Content and sender of a job (or of a whole page); content the job carries is not read from the store. */
  private async load(workspaceId: string, from: string, contentRef: string, carried?: Uint8Array): Promise<Shared> {
    const [sender, compiled] = await Promise.all([
      this.deps.directory.checkSender(workspaceId, from),
      carried ? this.deps.content.decode(workspaceId, contentRef, carried) : this.deps.content.get(workspaceId, contentRef),
    ]);
    return { sender, compiled };
  }

  /** Resolves sender (and DKIM key) and content, merges, and builds the MIME parts. */
  private async prepare(job: Job, shared?: Shared) {
    const loaded = shared ?? (await this.load(job.workspaceId, fromOf(job), job.contentRef, job.content));
    if (loaded.sender === undefined) throw loaded.error;
    const { sender, compiled } = loaded;
    // The recipient token (unsubscribe, tracking) is signed for the content's workspace:
    // content of another tenant must never go out, nor its unsubscribes land in that tenant's list.
    if (compiled.workspaceId !== job.workspaceId) throw new PermanentError(`content ${job.contentRef} does not belong to workspace ${job.workspaceId}`);
    // A forward is the original sender's message, sent as it came: no sender of ours to allow or sign for.
    if (compiled.carried?.forwarded) return buildForwardedMail(job, compiled.carried.forwarded);
    if (!sender.allowed) return "sender_not_allowed" as const;
    const merged = this.deps.merger.merge(
      compiled,
      { email: job.recipient.email, contactId: job.recipient.contactId, messageId: job.messageId, variables: job.recipient.variables },
      { secret: this.opts.secret, publicUrl: this.opts.publicUrl },
    );
    return buildMail(job, merged, sender, contentVersionOf(compiled), { secret: this.opts.secret, bounceDomain: this.opts.bounceDomain }, compiled.carried);
  }

  private async waitForToken(workspaceId: string, ctx: JobContext, maxInline: number): Promise<number> {
    const deadline = this.now() + maxInline;
    for (;;) {
      const wait = await this.deps.pacer.acquire(workspaceId);
      if (wait === 0) return 0;
      if (this.now() + wait > deadline) return wait;
      ctx.working();
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Failure before any SMTP transaction (attempt 0). */
  private async fail(job: Job, detail: string): Promise<void> {
    this.counters.failed += 1;
    this.deps.metrics?.outcome(laneOf(job), "failed");
    await this.finish(job, { type: "failed", detail, smtpCode: 0, attempt: 0 });
  }

  /**
   * Records a final outcome, then tells the world. A bounce's address is suppressed by the
   * audience unit's consumer of the BOUNCED event (the one path for a hard bounce).
   */
  private async finish(job: Job, outcome: Outcome): Promise<void> {
    const now = new Date(this.now());
    await this.deps.deliveries.markFinal(job.deliveryId, job.workspaceId, outcome, now);
    await this.deps.events.publish(this.eventOf(job, outcome));
  }

  /**
   * The delivery ended earlier (this is a redelivery): publish the event again, as it may not
   * have been after the store write (deduplicated by its derived id), and ack.
   */
  private async settleFinished(job: Job, record: DeliveryRecord): Promise<Step> {
    const outcome = record.outcome ?? { type: record.state as Outcome["type"], detail: "", smtpCode: 0, attempt: record.attempts };
    await this.deps.events.publish(this.eventOf(job, outcome));
    return ACK;
  }

  private eventOf(job: Job, outcome: Outcome) {
    return {
      type: outcome.type,
      deliveryId: job.deliveryId,
      workspaceId: job.workspaceId,
      source: job.source,
      emailId: job.emailId,
      broadcastId: job.broadcastId,
      messageId: job.messageId,
      recipient: job.recipient.email,
      contactId: job.recipient.contactId,
      groupBy: job.groupBy,
      detail: outcome.detail,
      smtpCode: outcome.smtpCode,
      attempt: outcome.attempt,
      // Delivery bounces only on a permanent verdict (classifySmtpError): a transient fault
      // is deferred, then failed, never bounced. So every bounce here is a hard one.
      ...(outcome.type === "bounced" ? { permanent: true } : {}),
      tags: job.tags,
      otherRecipients: [...(job.cc ?? []), ...(job.bcc ?? [])],
      ...(outcome.route ? { route: outcome.route } : {}),
    };
  }
}
