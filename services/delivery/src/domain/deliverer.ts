import type { Logger } from "../../../kit/src/logger.js";
import type { Job } from "./job.js";
import { invalidJobReason } from "./job.js";
import { buildMail, contentVersionOf } from "./message.js";
import { classifySmtpError, clip, retryDelayMs } from "./outcome.js";
import type { Pacer } from "./pacer.js";
import {
  PermanentError,
  type ContentMerger,
  type ContentSource,
  type DeliveriesRepository,
  type DeliveryMetrics,
  type DeliveryRecord,
  type EventPublisher,
  type MailTransport,
  type Outcome,
  type OutgoingMail,
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
  private readonly sending = new Set<JobContext>();
  private ticker?: NodeJS.Timeout;

  constructor(
    private readonly deps: DelivererDeps,
    private readonly opts: DelivererOptions,
  ) {
    this.now = deps.now ?? Date.now;
  }

  async handle(job: Job, ctx: JobContext): Promise<Decision> {
    this.counters.inFlight += 1;
    try {
      return await this.deliver(job, ctx);
    } finally {
      this.counters.inFlight -= 1;
    }
  }

  private async deliver(job: Job, ctx: JobContext): Promise<Decision> {
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
      return { kind: "ack" };
    }
    // A redelivery may be for a delivery that already ended: never send it again.
    if (ctx.deliveryCount > 1) {
      const existing = await deliveries.get(job.deliveryId);
      if (existing && TERMINAL.has(existing.state)) return this.settleFinished(job, existing);
    }

    if (job.source === "broadcast" && pacer.isPaused(job.broadcastId)) {
      return { kind: "retry", delayMs: this.opts.pauseRecheckMs };
    }
    const wait = await this.waitForToken(job.workspaceId, ctx);
    if (wait > 0) return { kind: "retry", delayMs: wait };

    let mail;
    try {
      mail = await this.prepare(job);
    } catch (err) {
      if (err instanceof PermanentError) {
        await this.fail(job, clip(err.message));
        return { kind: "ack" };
      }
      // Directory or content owner unreachable: nothing was sent, try again later.
      const delayMs = retryDelayMs(ctx.deliveryCount, Math.min(1_000, this.opts.retryBaseMs), this.opts.retryMaxMs);
      this.deps.logger.warn({ err, deliveryId: job.deliveryId, delayMs }, "could not prepare message; retrying");
      return { kind: "retry", delayMs };
    }
    if (mail === "sender_not_allowed") {
      await this.fail(job, "sender not allowed for this workspace");
      return { kind: "ack" };
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
    const outcome = await this.transact(mail, attempt, ctx, laneOf(job));
    this.deps.metrics?.outcome(laneOf(job), outcome.type);
    if (outcome.type === "deferred") {
      this.counters.deferred += 1;
      await deliveries.markDeferred(job.deliveryId, this.opts.workerId, outcome, new Date(this.now()));
      await this.deps.events.publish(this.eventOf(job, outcome));
      return { kind: "retry", delayMs: retryDelayMs(attempt, this.opts.retryBaseMs, this.opts.retryMaxMs) };
    }
    this.counters[outcome.type] += 1;
    this.rememberUnsettled(job.deliveryId, outcome);
    await this.finish(job, outcome);
    this.unsettled.delete(job.deliveryId);
    return { kind: "ack" };
  }

  /** One SMTP transaction, turned into an outcome; keeps the job alive while it lasts. */
  private async transact(mail: OutgoingMail, attempt: number, ctx: JobContext, lane: string): Promise<Outcome> {
    this.keepAlive(ctx);
    const sent = this.deps.metrics?.sendStarted(lane);
    try {
      const result = await this.deps.transport.send(mail);
      return { type: "sent", detail: clip(result.response), smtpCode: result.code, attempt };
    } catch (err) {
      const verdict = classifySmtpError(err);
      if (verdict.kind === "permanent") return { type: "bounced", detail: verdict.detail, smtpCode: verdict.code, attempt };
      if (attempt >= this.opts.maxAttempts) {
        const detail = clip(`gave up after ${attempt} attempts: ${verdict.detail}`);
        return { type: "failed", detail, smtpCode: verdict.code, attempt };
      }
      return { type: "deferred", detail: verdict.detail, smtpCode: verdict.code, attempt };
    } finally {
      sent?.();
      this.sending.delete(ctx);
    }
  }

  /**
   * Jobs inside an SMTP transaction tell the queue they are being worked on, so a slow
   * relay does not get them redelivered elsewhere. One shared ticker, not a timer per send.
   */
  private keepAlive(ctx: JobContext): void {
    this.sending.add(ctx);
    if (this.ticker) return;
    this.ticker = setInterval(() => {
      for (const c of this.sending) c.working();
      if (this.sending.size === 0) {
        clearInterval(this.ticker);
        this.ticker = undefined;
      }
    }, Math.max(100, Math.min(10_000, this.opts.claimTtlMs / 3)));
    this.ticker.unref();
  }

  private rememberUnsettled(deliveryId: string, outcome: Outcome): void {
    if (this.unsettled.size >= 10_000) this.unsettled.delete(this.unsettled.keys().next().value as string);
    this.unsettled.set(deliveryId, outcome);
  }

  /** Resolves sender (and DKIM key) and content, merges, and builds the MIME parts. */
  private async prepare(job: Job) {
    const from = job.fromName ? `"${job.fromName.replace(/["\\]/g, "")}" <${job.fromEmail}>` : job.fromEmail;
    const [sender, compiled] = await Promise.all([
      this.deps.directory.checkSender(job.workspaceId, from),
      this.deps.content.get(job.workspaceId, job.contentRef),
    ]);
    if (!sender.allowed) return "sender_not_allowed" as const;
    // The recipient token (unsubscribe, tracking) is signed for the content's workspace:
    // content of another tenant must never go out, nor its unsubscribes land in that tenant's list.
    if (compiled.workspaceId !== job.workspaceId) throw new PermanentError(`content ${job.contentRef} does not belong to workspace ${job.workspaceId}`);
    const merged = this.deps.merger.merge(
      compiled,
      { email: job.recipient.email, contactId: job.recipient.contactId, messageId: job.messageId, variables: job.recipient.variables },
      { secret: this.opts.secret, publicUrl: this.opts.publicUrl },
    );
    return buildMail(job, merged, sender, contentVersionOf(compiled), { secret: this.opts.secret, bounceDomain: this.opts.bounceDomain });
  }

  private async waitForToken(workspaceId: string, ctx: JobContext): Promise<number> {
    const maxInline = this.opts.maxInlineWaitMs ?? 2_000;
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

  /** Records a final outcome, then tells the world; a bounce also suppresses the address. */
  private async finish(job: Job, outcome: Outcome): Promise<void> {
    const now = new Date(this.now());
    await this.deps.deliveries.markFinal(job.deliveryId, job.workspaceId, outcome, now);
    if (outcome.type === "bounced") await this.suppress(job, outcome.detail);
    await this.deps.events.publish(this.eventOf(job, outcome));
  }

  private async suppress(job: Job, detail: string): Promise<void> {
    await this.deps.directory.addHardBounce(job.workspaceId, job.recipient.email, detail);
    await this.deps.deliveries.markSuppressed(job.deliveryId);
  }

  /**
   * The delivery ended earlier (this is a redelivery): finish what may not have happened
   * after the store write — suppression, the event (deduplicated by its derived id) — and ack.
   */
  private async settleFinished(job: Job, record: DeliveryRecord): Promise<Decision> {
    const outcome = record.outcome ?? { type: record.state as Outcome["type"], detail: "", smtpCode: 0, attempt: record.attempts };
    if (record.state === "bounced" && !record.suppressed) await this.suppress(job, outcome.detail);
    await this.deps.events.publish(this.eventOf(job, outcome));
    return { kind: "ack" };
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
    };
  }
}
