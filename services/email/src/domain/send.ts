import { AppError, appError, badRequest, conflict, unavailable } from "@mailroom/kit/errors.js";
import { recordOf, type CompiledContent, type ContentExtras, type EmailRecord, type EmailRequest, type StoredEmail, type SuppressedRecipient } from "./model.js";
import type {
  Clock,
  ContentWriter,
  DeliveryQueue,
  Directory,
  EmailStore,
  IdempotencyStore,
  Logger,
  Renderer,
  SenderCheck,
  TemplateContent,
} from "./ports.js";
import { effectiveSettings, validateRequest, type ValidatedRequest } from "./validate.js";
import { IdempotencyGate } from "./idempotency.js";
import { Publisher } from "./dispatch.js";
import { requestHash } from "./hash.js";
import { tagKey, validateExtras, type ValidatedExtras } from "./extras.js";
import { rawLiquidKey, rawUsesLiquid } from "@mailroom/content/liquid/raw.js";
import { forwardedSummary, type ForwardedSummary } from "./forwarded.js";

export type Outcome = { ok: true; record: EmailRecord } | { ok: false; error: AppError };

export interface IdSource {
  emailId(): string;
  messageId(domain: string): string;
}

export interface SendDeps {
  emails: EmailStore;
  idempotency: IdempotencyStore;
  directory: Directory;
  renderer: Renderer;
  queue: DeliveryQueue;
  /** The content store delivery reads from: written before each job is published. */
  content: ContentWriter;
  clock: Clock;
  logger: Logger;
  ids: IdSource;
  /** Name of this process in publish claims. */
  owner: string;
  /** How long a publish claim holds before another process may take it over. */
  claimLeaseMs?: number;
  /** How long an in-flight idempotency key blocks its duplicates. */
  idempotencyLeaseMs?: number;
}

/** One email of a request on its way through the stages. */
interface Item {
  index: number;
  req: EmailRequest;
  emailId: string;
  outcome?: Outcome;
  valid?: ValidatedRequest;
  /** Cc, bcc, headers, attachments and tags, checked. */
  extras?: ValidatedExtras;
  /** Cc / bcc addresses on the suppression list: left out of the envelope. */
  suppressedCopies?: SuppressedRecipient[];
  /** A forwarded message's From and Subject, read from its headers. */
  forwarded?: ForwardedSummary;
  /** Set while this request holds the item's idempotency key. */
  heldKey?: string;
  sender?: { fromEmail: string; fromName: string };
  template?: TemplateContent;
  suppressedReason?: string;
  compiled?: CompiledContent;
  stored?: StoredEmail;
  /** The content store write of an email to publish now, started alongside its insert. */
  contentWritten?: Promise<Uint8Array | undefined>;
}

/** Sends reserved for a group of items (the request, or one item when items are independent). */
interface Reservation {
  period: string;
  count: number;
  items: Item[];
}

export interface AcceptOptions {
  /**
   * Each email is its own request (single sends the gateway coalesced into one call): the
   * monthly limit refuses items, not all of them. By default a request's emails are
   * reserved all or nothing, as the batch endpoint promises.
   */
  independent?: boolean;
  /** The request being served: named in the delivery jobs published and in failure logs. */
  requestId?: string;
  /**
   * The request's trace context (a W3C traceparent, opaque here; "" or absent while tracing
   * is off), kept on each email stored so the scheduler's later release links back to it.
   */
  traceparent?: string;
  /**
   * Who sent it, as the audit log names actors ("key:key_…", "member:usr_…", "cli:user"):
   * kept on each email, so sends need no audit entry of their own (DESIGN §10.7).
   */
  sentBy?: string;
}

const pending = (items: Item[]) => items.filter((i) => !i.outcome);

const fail = (item: Item, error: AppError) => {
  item.outcome = { ok: false, error };
};

/** A refusal of one item (4xx) stays with the item; anything else is the request's problem. */
const isItemError = (err: unknown): err is AppError => err instanceof AppError && err.httpStatus < 500;

/**
 * Runs `fn` for every item and waits for all of them; an item's own refusal marks that
 * item failed, and the first other error is rethrown once everything has settled (so
 * cleanup never races work still in progress).
 */
async function settleAll(items: Item[], fn: (item: Item) => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(
    items.map(async (item) => {
      try {
        await fn(item);
      } catch (err) {
        if (isItemError(err)) fail(item, err);
        else throw err;
      }
    }),
  );
  const failure = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) throw failure.reason;
}

/**
 * Accepts transactional emails: one, or a batch whose items succeed or fail on their
 * own. The stages run for all items together so a batch of 50 costs about as many
 * round trips as one email: validate -> idempotency -> sender/template -> suppression
 * check with usage reservation (one call, all or nothing) alongside compilation ->
 * store (the email, and the content store entry delivery reads, at once) -> publish.
 */
/**
 * How long a request holds its idempotencyKey before another may take it over: a little
 * over the gateway's 30 s deadline, so no live client still waits for the holder. A takeover
 * finishes with the same email id (idempotency.ts), so a short lease never sends twice; a long
 * one (it was 120 s) refused every retry of a key whose email process was killed mid-request
 * with 409 for two minutes.
 */
export const IDEMPOTENCY_LEASE_MS = 35_000;

export class EmailSender {
  private readonly gate: IdempotencyGate;
  private readonly publisher: Publisher;
  private readonly claimLeaseMs: number;

  constructor(private readonly deps: SendDeps) {
    this.gate = new IdempotencyGate(deps.idempotency, deps.emails, deps.clock, deps.idempotencyLeaseMs ?? IDEMPOTENCY_LEASE_MS);
    this.claimLeaseMs = deps.claimLeaseMs ?? 30_000;
    this.publisher = new Publisher(deps.emails, deps.queue, deps.content, deps.clock, deps.owner, deps.logger);
  }

  async accept(workspaceId: string, requests: EmailRequest[], opts: AcceptOptions = {}): Promise<Outcome[]> {
    const now = this.deps.clock.now();
    const items: Item[] = requests.map((req, index) => ({ index, req, emailId: this.deps.ids.emailId() }));

    for (const item of items) {
      try {
        item.valid = validateRequest(item.req, now);
        item.extras = validateExtras(item.req, item.valid.recipient);
        if (item.req.content.kind === "forwarded") item.forwarded = forwardedSummary(item.req.content.raw);
      } catch (err) {
        if (!isItemError(err)) throw err;
        fail(item, err);
      }
    }

    const reservations: Reservation[] = [];
    try {
      await settleAll(pending(items).filter((i) => i.req.idempotencyKey !== undefined), (item) => this.enterGate(workspaceId, item));
      const lookups = pending(items);
      // Templates first: a templated send goes out from its template's sender when it has one.
      await this.resolveTemplates(workspaceId, lookups);
      await this.resolveSenders(workspaceId, pending(lookups));

      // Suppression check and usage reservation are one call (the audience unit's ReserveSendable), in parallel with
      // compilation. Suppressed recipients are rare, so compiling them too (and dropping
      // the result) is cheaper than waiting for the suppression list before compiling.
      const checked = pending(items);
      const compileErrors = new Map<Item, unknown>();
      const groups = opts.independent ? checked.map((item) => [item]) : [checked];
      const [reserved] = await Promise.allSettled([
        Promise.allSettled(groups.map((group) => this.reserveSendable(workspaceId, group))),
        Promise.all(checked.map((item) => this.compile(workspaceId, item).catch((err) => void compileErrors.set(item, err)))),
      ]);
      if (reserved.status === "rejected") throw reserved.reason;
      let reserveFailure: { err: unknown } | undefined;
      reserved.value.forEach((result, i) => {
        if (result.status === "fulfilled") {
          if (result.value) reservations.push(result.value);
        } else if (opts.independent && isItemError(result.reason)) {
          fail(groups[i]![0]!, result.reason);
        } else {
          reserveFailure ??= { err: result.reason };
        }
      });
      // Thrown once every reservation made is recorded, so finish() gives them back.
      if (reserveFailure) throw reserveFailure.err;
      let compileFailure: { err: unknown } | undefined;
      for (const item of checked) {
        if (item.outcome) continue; // refused by the monthly limit
        if (item.suppressedReason !== undefined) {
          item.compiled = undefined; // recorded FAILED without content, never sent
          continue;
        }
        if (!compileErrors.has(item)) continue;
        const err = compileErrors.get(item);
        if (isItemError(err)) fail(item, err);
        else compileFailure ??= { err };
      }
      if (compileFailure) throw compileFailure.err;

      await settleAll(pending(items), async (item) => {
        try {
          await this.store(workspaceId, item, reservations.find((r) => r.items.includes(item))?.period, opts);
        } catch (err) {
          if (isItemError(err)) throw err;
          // The store failed for this item only; the others are kept and sent, so the
          // request must still answer with them (a whole-request 5xx after sending some
          // would invite a retry that sends them twice).
          this.deps.logger.error({ err, emailId: item.emailId, requestId: opts.requestId }, "storing an email failed");
          fail(item, unavailable("service_unavailable", "The email could not be stored; try again shortly"));
        }
      });
    } catch (err) {
      for (const item of items) {
        if (!item.stored && !item.outcome) fail(item, err instanceof AppError ? err : appError({ code: "internal", httpStatus: 500, message: "Internal error" }));
      }
      await this.finish(workspaceId, items, reservations, opts.requestId);
      throw err;
    }
    await this.finish(workspaceId, items, reservations, opts.requestId);
    return items.map((i) => i.outcome!);
  }

  /** Completes or frees idempotency keys, returns unused usage, publishes, upserts contacts. */
  private async finish(workspaceId: string, items: Item[], reservations: Reservation[], requestId: string | undefined) {
    const stored = items.filter((i) => i.stored);
    const tasks: Promise<unknown>[] = [];
    const unused = new Map<string, number>();
    for (const reservation of reservations) {
      // Each recipient of a sent email counts (to, and the cc / bcc not suppressed); an email
      // whose `to` is suppressed is never sent, so none of its recipients does.
      const counted = reservation.items.reduce((n, i) => n + (i.stored && i.stored.dispatch !== "none" ? (i.stored.usageCount ?? 1) : 0), 0);
      if (reservation.count > counted) unused.set(reservation.period, (unused.get(reservation.period) ?? 0) + reservation.count - counted);
    }
    for (const [period, count] of unused) {
      tasks.push(
        this.deps.directory
          .releaseUsage(workspaceId, count, period)
          .catch((err) => this.deps.logger.warn({ err, workspaceId, requestId }, "releasing unused usage failed")),
      );
    }
    for (const item of items) {
      if (item.heldKey === undefined) continue;
      const key = item.heldKey;
      const done = item.stored
        ? this.gate.complete(workspaceId, key, item.emailId, recordOf(item.stored))
        : this.gate.release(workspaceId, key, item.emailId);
      // A key left in flight is taken over after its lease and resolved from the store.
      tasks.push(done.catch((err) => this.deps.logger.warn({ err, workspaceId, requestId }, "settling an idempotency key failed")));
    }
    for (const item of stored) {
      const email = item.stored!;
      if (email.dispatch === "claimed") tasks.push(this.publisher.publish(email, requestId, item.contentWritten));
      const content = item.req.content;
      if (content.kind === "raw" && content.contactProperties && Object.keys(content.contactProperties).length) {
        tasks.push(
          this.deps.directory
            .upsertContact(workspaceId, email.recipient, content.contactProperties)
            .catch((err) => this.deps.logger.warn({ err, workspaceId, emailId: email.id, requestId }, "contact upsert failed")),
        );
      }
    }
    await Promise.all(tasks);
  }

  private async enterGate(workspaceId: string, item: Item): Promise<void> {
    const key = item.req.idempotencyKey!;
    const hash = requestHash(item.req);
    const result = await this.gate.enter(workspaceId, key, hash, item.emailId);
    if (result.kind === "refused") throw result.error;
    if (result.kind === "replay") {
      item.outcome = { ok: true, record: result.record };
      return;
    }
    item.emailId = result.emailId;
    item.heldKey = key;
  }

  /** Checks each distinct `from` once per request. */
  private async resolveSenders(workspaceId: string, items: Item[]): Promise<void> {
    const checks = new Map<string, Promise<SenderCheck>>();
    let defaults: Promise<{ fromEmail: string; fromName: string }> | undefined;
    await settleAll(items, async (item) => {
      const content = item.req.content;
      if (content.kind === "templated") {
        if (item.template?.fromEmail) {
          item.sender = { fromEmail: item.template.fromEmail, fromName: item.template.fromName ?? "" };
          return;
        }
        defaults ??= this.defaultSender(workspaceId);
        item.sender = await defaults;
        return;
      }
      if (content.kind === "forwarded") {
        // The original sender's message, not the workspace's: nothing of ours to check or sign.
        const f = item.forwarded!;
        item.sender = { fromEmail: f.fromAddress || content.envelopeFrom, fromName: f.fromName };
        return;
      }
      let pendingCheck = checks.get(content.from);
      if (!pendingCheck) {
        pendingCheck = this.deps.directory.checkSender(workspaceId, content.from);
        checks.set(content.from, pendingCheck);
      }
      const check = await pendingCheck;
      if (!check.allowed) {
        throw badRequest(
          "invalid_from",
          `${check.address || content.from} is not a verified address or on a verified domain of this workspace`,
          { allowedEmails: check.allowedEmails, allowedDomains: check.allowedDomains },
        );
      }
      item.sender = { fromEmail: check.address, fromName: content.fromName ?? check.name ?? "" };
    });
  }

  /**
   * A template without its own sender: templated emails go out from the workspace's first
   * verified address, or no-reply@ its first verified domain.
   */
  private async defaultSender(workspaceId: string): Promise<{ fromEmail: string; fromName: string }> {
    const senders = await this.deps.directory.verifiedSenders(workspaceId);
    const fromEmail = senders.emails[0] ?? (senders.domains[0] ? `no-reply@${senders.domains[0]}` : undefined);
    if (!fromEmail) {
      throw badRequest("invalid_from", "The workspace has no verified address or domain to send templated emails from", {
        allowedEmails: [],
        allowedDomains: [],
      });
    }
    return { fromEmail, fromName: "" };
  }

  private async resolveTemplates(workspaceId: string, items: Item[]): Promise<void> {
    const byName = new Map<string, Promise<TemplateContent | null>>();
    await settleAll(
      items.filter((i) => i.req.content.kind === "templated"),
      async (item) => {
        const name = (item.req.content as { template: string }).template;
        let lookup = byName.get(name);
        if (!lookup) {
          lookup = this.deps.directory.getTemplate(workspaceId, name);
          byName.set(name, lookup);
        }
        const template = await lookup;
        if (!template) {
          throw badRequest("template_not_found", `Template "${name}" does not exist in this workspace`, {
            extra: { template: JSON.stringify(name) },
          });
        }
        // A layout frames templates and a snippet is rendered by them: neither is an email of its own.
        if (template.kind === "layout" || template.kind === "snippet") {
          throw badRequest(
            "invalid_template",
            `Template "${name}" is a ${template.kind}: layouts and snippets cannot be sent on their own; send a template of kind "template" (one that names this ${template.kind === "layout" ? "layout in its `layout`" : 'snippet with {% render %}'})`,
            { extra: { template: JSON.stringify(name), kind: JSON.stringify(template.kind) } },
          );
        }
        item.template = template;
      },
    );
  }

  /**
   * Looks the recipients up on the suppression list and reserves usage for the others,
   * all or nothing (403 `monthly_limit_reached`), in one call (ReserveSendable).
   */
  private async reserveSendable(workspaceId: string, items: Item[]): Promise<Reservation | undefined> {
    if (!items.length) return undefined;
    // Every recipient of every email: to, cc and bcc are each checked and counted (DESIGN §9.5).
    const res = await this.deps.directory.reserveSendable(
      workspaceId,
      items.flatMap((i) => [i.valid!.recipient, ...i.extras!.cc, ...i.extras!.bcc].map((a) => a.toLowerCase())),
    );
    for (const item of items) {
      const reason = res.suppressed.get(item.valid!.recipient.toLowerCase());
      if (reason !== undefined) item.suppressedReason = reason || "suppressed";
      const copies = [...item.extras!.cc, ...item.extras!.bcc].filter((a) => res.suppressed.has(a.toLowerCase()));
      if (copies.length) item.suppressedCopies = copies.map((email) => ({ email, reason: res.suppressed.get(email.toLowerCase()) || "suppressed" }));
    }
    if (!res.granted) {
      const count = items.filter((i) => i.suppressedReason === undefined).length;
      const detail = res.limit !== undefined && res.used !== undefined ? ` (${res.used} of ${res.limit} used)` : "";
      throw appError({
        code: "monthly_limit_reached",
        httpStatus: 403,
        message:
          count > 1
            ? `Sending ${count} emails would exceed the monthly sending limit of your plan${detail}`
            : `Monthly sending limit of your plan reached${detail}`,
      });
    }
    return res.reserved > 0 ? { period: res.period, count: res.reserved, items } : undefined;
  }

  private async compile(workspaceId: string, item: Item): Promise<void> {
    const content = item.req.content;
    if (content.kind === "forwarded") {
      // Sent as its bytes: the compiled message only names the workspace (and the subject, for the console).
      item.compiled = await this.deps.renderer.compile({
        workspaceId,
        contentId: item.emailId,
        subject: item.forwarded!.subject,
        html: "",
        text: "",
        previewText: "",
        trackClicks: false,
        trackOpens: false,
        literal: true,
      });
      return;
    }
    const source =
      content.kind === "raw"
        ? { subject: content.subject, html: content.html, text: content.text ?? "", previewText: content.previewText ?? "" }
        : {
            subject: item.template!.subject,
            html: item.template!.html,
            text: item.template!.text,
            previewText: item.template!.previewText,
          };
    // A raw email's content is Liquid too (DESIGN §10.2), rendered with its contactProperties;
    // without Liquid markup, or relayed by SMTP submission, it is sent as given, byte for byte.
    const rawLiquid = content.kind === "raw" && !content.asGiven && rawUsesLiquid(source.subject, source.html, source.text, source.previewText);
    item.compiled = await this.deps.renderer.compile({
      workspaceId,
      contentId: item.emailId,
      ...source,
      ...effectiveSettings(item.req),
      literal: content.kind === "raw" && !rawLiquid,
      // Only an automation's send offers an unsubscribe; a public API email stays transactional.
      automation: item.req.automation === true,
      ...(content.kind === "templated" && item.template!.liquidKey
        ? { liquid: { template: item.template!, variables: content.variables, email: item.valid!.recipient } }
        : {}),
      ...(rawLiquid
        ? {
            liquid: {
              template: { name: "", ...source, liquidKey: rawLiquidKey(source) },
              variables: content.contactProperties ?? {},
              email: item.valid!.recipient,
              raw: true,
            },
          }
        : {}),
    });
  }

  private async store(workspaceId: string, item: Item, usagePeriod: string | undefined, { traceparent, sentBy }: AcceptOptions): Promise<void> {
    const now = this.deps.clock.now();
    const { req, valid, sender } = item;
    const content = req.content;
    const suppressed = item.suppressedReason !== undefined;
    const email: StoredEmail = {
      id: item.emailId,
      workspaceId,
      // A forward's id (never in its bytes) is minted at our SRS domain, not the original sender's.
      messageId: this.deps.ids.messageId((content.kind === "forwarded" && content.envelopeFrom ? content.envelopeFrom : sender!.fromEmail).split("@").pop() ?? ""),
      status: suppressed ? "FAILED" : valid!.scheduled ? "SCHEDULED" : "SENT",
      to: req.to,
      // A forward is recorded as a raw email (the public API knows raw and templated).
      type: content.kind === "templated" ? "templated" : "raw",
      createdAt: now,
      updatedAt: now,
      recipient: valid!.recipient,
      fromEmail: sender!.fromEmail,
      fromName: sender!.fromName,
      variables: content.kind === "raw" ? (content.contactProperties ?? {}) : content.kind === "templated" ? content.variables : {},
      compiled: item.compiled,
      dispatch: suppressed ? "none" : valid!.scheduled ? "pending" : "claimed",
      dueAt: valid!.dueAt,
    };
    if (suppressed) email.statusReason = `Recipient is on the suppression list (${item.suppressedReason})`;
    if (content.kind === "raw") {
      email.from = content.from;
      email.subject = content.subject;
    } else if (content.kind === "forwarded") {
      email.from = item.forwarded!.from || content.envelopeFrom;
      email.subject = item.forwarded!.subject;
      email.forward = { envelopeFrom: content.envelopeFrom, ...(content.receivedId ? { receivedId: content.receivedId } : {}) };
      // Kept as the attachments are (a publish retried later writes the content store again from
      // here); a suppressed target's is never sent, so nothing is kept.
      if (!suppressed) email.attachmentBytes = [content.raw];
    } else {
      email.template = content.template;
    }
    // The request's replyTo overrides the template's own.
    const replyTo = valid!.replyTo.length ? valid!.replyTo : (item.template?.replyTo ?? []);
    if (replyTo.length) email.replyTo = replyTo;
    if (req.groupBy) email.groupBy = req.groupBy;
    if (valid!.scheduled) email.sendAt = valid!.dueAt;
    if (email.dispatch === "claimed") {
      email.leaseOwner = this.deps.owner;
      email.leaseUntil = new Date(now.getTime() + this.claimLeaseMs);
    }
    if (!suppressed && usagePeriod) email.usagePeriod = usagePeriod;
    const extras = item.extras!;
    if (req.cc?.length) email.cc = req.cc.map((c) => c.trim());
    if (req.bcc?.length) email.bcc = req.bcc.map((c) => c.trim());
    if (extras.headers.length) email.headers = extras.headers;
    if (extras.attachments.length) {
      email.attachments = extras.attachments.map(({ content: _bytes, ...info }) => info);
      // Kept with the compiled content (GetEmailAttachment, a scheduled email's release).
      if (item.compiled) email.attachmentBytes = extras.attachments.map((a) => a.content);
    }
    if (extras.tags.length) {
      email.tags = extras.tags;
      email.tagKeys = extras.tags.map(tagKey);
    }
    const left = new Set((item.suppressedCopies ?? []).map((s) => s.email.toLowerCase()));
    const cc = extras.cc.filter((a) => !left.has(a.toLowerCase()));
    const bcc = extras.bcc.filter((a) => !left.has(a.toLowerCase()));
    if (cc.length) email.ccAddresses = cc;
    if (bcc.length) email.bccAddresses = bcc;
    if (item.suppressedCopies?.length) email.suppressed = item.suppressedCopies;
    if (cc.length || bcc.length) email.usageCount = 1 + cc.length + bcc.length;
    // Any email the scheduler may publish later (scheduled, or one whose publisher dies):
    // nothing stored while tracing is off, and nothing for one that is never sent.
    if (traceparent && !suppressed) email.traceparent = traceparent;
    if (sentBy) email.sentBy = sentBy;

    // A fresh id (no idempotency key) claimed by this process: nobody else can hold the id
    // or touch the email before its lease ends, so content and record are written together.
    const freshId = item.heldKey === undefined && email.dispatch === "claimed";
    // An email to publish now: its content goes to the content store while the email is
    // inserted (one round trip's wait, not two); the job waits for both (finish()). A
    // scheduled email's content is written when the scheduler releases it.
    const contentWritten =
      email.dispatch === "claimed" && item.compiled ? this.publisher.writeContent(email, item.compiled, contentExtrasOf(email, extras)) : undefined;
    // Observed here so a failure never goes unhandled; publish() sees it (and defers the claim).
    contentWritten?.catch(() => undefined);
    // When the insert fails, what was written stays until the bucket's max age drops it: the
    // same id may be another request's email (an idempotency takeover finishes with the id of
    // the request it took over), whose job may name that very entry.
    if (!(await this.deps.emails.insert(email, { freshId }))) {
      throw conflict("idempotency_request_in_progress", "A request with this idempotencyKey is still in progress; retry shortly");
    }
    item.contentWritten = contentWritten;
    item.stored = email;
    item.outcome = { ok: true, record: recordOf(email) };
  }
}

/** The content store's extras of an email (undefined when it has none: the content is the compiled message alone). */
export function contentExtrasOf(
  email: Pick<StoredEmail, "cc" | "headers" | "attachments" | "forward" | "attachmentBytes">,
  extras: { attachments: Array<{ content: Uint8Array }> },
): ContentExtras | undefined {
  if (email.forward) return { cc: [], headers: [], attachments: [], forwarded: { raw: email.attachmentBytes![0]!, envelopeFrom: email.forward.envelopeFrom } };
  if (!email.cc?.length && !email.headers?.length && !email.attachments?.length) return undefined;
  return {
    cc: email.cc ?? [],
    headers: email.headers ?? [],
    attachments: (email.attachments ?? []).map((info, i) => ({ ...info, content: extras.attachments[i]!.content })),
  };
}
