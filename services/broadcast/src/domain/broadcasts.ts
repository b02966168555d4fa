import { appError, badRequest, conflict, notFound, type AppError } from "@mailroom/kit/errors.js";
import { variablesJson } from "@mailroom/pipeline/work.js";
import { assertBroadcastAccess, assertMaySend } from "./gating.js";
import { draftAbTest, validateAbTest, variantFields, type AbTestInput } from "./abtest.js";
import {
  BROADCAST_STATUSES,
  DELIVERY_METHODS,
  HTML_CLIP_BYTES,
  HTML_CLIP_WARNING,
  HTML_MAX_BYTES,
  LIST_DEFAULT_LIMIT,
  LIST_MAX_LIMIT,
  SCHEDULE_HORIZON_MS,
  AB_MIN_WAIT_SECONDS,
  variantContentKeyOf,
  variantContentRefOf,
  type AbTest,
  TEST_MAX_RECIPIENTS,
  TEST_SUBJECT_PREFIX,
  contentRefOf,
  emptyProgress,
  type Broadcast,
  type BroadcastAudience,
  type BroadcastStatus,
  type DeliveryMethod,
} from "./model.js";
import type {
  BroadcastRepository,
  Clock,
  ContentRepository,
  DeliveryContent,
  DeliveryQueue,
  Directory,
  DraftFields,
  Logger,
  RenderedMessage,
  Renderer,
  TimelinePoint,
  TimelineRepository,
} from "./ports.js";

export interface CreateInput {
  name: string;
  subject: string;
  previewText?: string;
  fromEmail: string;
  fromName: string;
  html: string;
  text?: string;
  replyTo?: string[];
  /** Required on create; on update, absent keeps the broadcast's audience. */
  audience?: AudienceInput;
  settings?: { trackOpens?: boolean; trackClicks?: boolean };
  allowUnknownVariables?: boolean;
  /** An A/B test (DESIGN §9.8); absent: none (on update too: the draft's is removed). */
  abTest?: AbTestInput;
}

export interface BroadcastDeps {
  broadcasts: BroadcastRepository;
  lockedContent: ContentRepository;
  directory: Directory;
  renderer: Renderer;
  queue: DeliveryQueue;
  /** The content store delivery reads from (test sends write their own entry there). */
  deliveryContent: DeliveryContent;
  timeline: TimelineRepository;
  clock: Clock;
  logger: Logger;
  ids: { broadcastId(): string; unique(): string; messageId(domain: string): string };
  /** Called after a schedule without a future sendAt, so sending starts at once. */
  onScheduled?: () => void;
  /** Shortest A/B `waitFor` accepted, in seconds (MAILROOM_AB_MIN_WAIT_SECONDS; 300 unless lowered for tests). */
  abMinWaitSeconds?: number;
  /** Called after an A/B winner was chosen by a user, so the rest goes out at once. */
  onWinnerChosen?: () => void;
}

/** An audience as a request carries it (filters as JSON text; empty strings and lists: absent). */
export interface AudienceInput {
  all?: boolean;
  groups?: string[];
  segmentId?: string;
  filterJson?: string;
  exclude?: { groups?: string[]; segmentId?: string; filterJson?: string };
  topicId?: string;
}

export interface Created {
  broadcast: Broadcast;
  /** Contacts in the audience at the moment of the write. */
  audienceCount: number;
  variables: { detected: string[]; unknown: string[] };
  warnings: string[];
}

const TEST_CONTENT_SEPARATOR = "-test-";
// CR, LF, NUL and other C0 controls would let a value break out of its header line.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;
const ADDRESS = /^[^\s@<>()",;:\\[\]]+@[^\s@<>()",;:\\[\]]+\.[^\s@<>()",;:\\[\]]+$/;
const CURSOR = /^cmp_[0-9a-z]{26}$/;

const invalidPayload = (message: string) => badRequest("invalid_payload", message);
const broadcastNotFound = (id: string) => notFound("broadcast_not_found", `Broadcast ${id} not found`);

/** The broadcast use cases behind the Connect API. Every call is gated first. */
export class Broadcasts {
  constructor(private readonly deps: BroadcastDeps) {}

  private async gate(workspaceId: string) {
    const ws = await this.deps.directory.workspace(workspaceId);
    assertBroadcastAccess(ws);
    return ws;
  }

  async create(workspaceId: string, input: CreateInput): Promise<Created> {
    await this.gate(workspaceId);
    const { fields, variables, abTest } = await this.checkContent(workspaceId, input);
    const audience = validateAudience(input.audience);
    // The audience unit checks the audience's names and filters as it counts (400 when it refuses).
    const audienceCount = await this.deps.directory.audienceCount(workspaceId, audience);
    const now = this.deps.clock.now();
    const broadcast: Broadcast = {
      id: this.deps.ids.broadcastId(),
      workspaceId,
      ...fields,
      ...(abTest ? { abTest } : {}),
      status: "DRAFT",
      audience,
      settings: { trackOpens: input.settings?.trackOpens ?? true, trackClicks: input.settings?.trackClicks ?? true },
      allowUnknownVariables: input.allowUnknownVariables === true,
      createdAt: now,
      updatedAt: now,
      progress: emptyProgress(),
    };
    await this.deps.broadcasts.insert(broadcast);
    return { broadcast, audienceCount, variables, warnings: htmlWarnings(broadcast.html) };
  }

  /** Same checks as create; only a DRAFT can change (its content is not locked yet). */
  async update(workspaceId: string, id: string, input: CreateInput): Promise<Created> {
    await this.gate(workspaceId);
    const current = await this.load(workspaceId, id);
    if (current.status !== "DRAFT") throw notEditable(current.status);
    const { fields, variables, abTest } = await this.checkContent(workspaceId, input);
    const audience = input.audience === undefined ? current.audience : validateAudience(input.audience);
    const audienceCount = await this.deps.directory.audienceCount(workspaceId, audience);
    const draft: DraftFields = {
      ...fields,
      audience,
      settings: { trackOpens: input.settings?.trackOpens ?? current.settings.trackOpens, trackClicks: input.settings?.trackClicks ?? current.settings.trackClicks },
      allowUnknownVariables: input.allowUnknownVariables === true,
      abTest,
    };
    const updated = await this.deps.broadcasts.updateDraft(workspaceId, id, draft, this.deps.clock.now());
    if (!updated) throw notEditable((await this.load(workspaceId, id)).status);
    return { broadcast: updated, audienceCount, variables, warnings: htmlWarnings(updated.html) };
  }

  /**
   * The broadcast merged for one contact (by address) as it would be sent, but with
   * tracking off: a preview must not count opens or clicks, and its links go straight to
   * their targets. Without a contact (no address, or one that is no contact: contactFound
   * false) each merge field shows a sample value, its name in brackets ("Hello [firstName]"),
   * so the preview shows where contact data goes instead of blanks ("Hello ,").
   */
  async preview(workspaceId: string, id: string, contactEmail: string, variant?: number): Promise<RenderedMessage & { contactFound: boolean }> {
    await this.gate(workspaceId);
    const stored = await this.load(workspaceId, id);
    // An A/B test's variant: the broadcast with that variant's fields, as its share receives it.
    const variants = stored.abTest?.variants ?? [];
    if (variant !== undefined && !(Number.isInteger(variant) && variant >= 0 && variant < variants.length)) {
      throw invalidPayload(variants.length ? `variant must be the index of one of the ${variants.length} variants (0 to ${variants.length - 1})` : "variant: this broadcast has no A/B test");
    }
    const broadcast = variant === undefined ? stored : variantFields(stored, variants[variant]);
    const email = contactEmail.trim();
    if (email && (!ADDRESS.test(email) || CONTROL.test(email))) throw invalidPayload("contactEmail must be an email address");
    const contact = email ? await this.deps.directory.contactByEmail(workspaceId, email) : null;
    const rendered = await this.deps.renderer.render(
      { ...compileInputOf(broadcast, await this.workspaceZone(workspaceId)), trackOpens: false, trackClicks: false },
      {
        email: contact?.email ?? (email || "preview@example.invalid"),
        contactId: contact?.id ?? "",
        messageId: `preview.${broadcast.id}@preview.invalid`,
        variables: contact
          ? { ...contact.properties, firstName: contact.firstName, lastName: contact.lastName }
          : sampleVariables((await this.deps.renderer.detectVariables({
            html: `${broadcast.html}\n${broadcast.text}`, subject: broadcast.subject, previewText: broadcast.previewText, customProperties: [],
          })).detected),
      },
    );
    return { ...rendered, contactFound: contact !== null };
  }

  async timeline(workspaceId: string, id: string): Promise<TimelinePoint[]> {
    await this.gate(workspaceId);
    const broadcast = await this.load(workspaceId, id);
    return this.deps.timeline.list(broadcast.id);
  }

  async get(workspaceId: string, id: string): Promise<Broadcast> {
    await this.gate(workspaceId);
    return this.load(workspaceId, id);
  }

  /**
   * The broadcast with its audience counted now. A count the audience unit refuses (a segment or
   * topic deleted since) or cannot give leaves it out: the broadcast itself is still readable.
   */
  async getCounted(workspaceId: string, id: string): Promise<{ broadcast: Broadcast; audienceCount?: number }> {
    const broadcast = await this.get(workspaceId, id);
    try {
      return { broadcast, audienceCount: await this.deps.directory.audienceCount(workspaceId, broadcast.audience) };
    } catch (err) {
      this.deps.logger.warn({ err, broadcastId: id }, "audience not counted");
      return { broadcast };
    }
  }

  /**
   * The topic of a broadcast's audience ("" for none), for its messages' one-click unsubscribe:
   * not gated (a recipient's link keeps working whatever the workspace's flags).
   */
  async topicOf(workspaceId: string, id: string): Promise<string> {
    return (await this.load(workspaceId, id)).audience.topicId ?? "";
  }

  async list(workspaceId: string, query: { status?: string; limit?: number; cursor?: string }): Promise<{ items: Broadcast[]; cursor: string; hasMore: boolean }> {
    await this.gate(workspaceId);
    if (query.status !== undefined && !BROADCAST_STATUSES.includes(query.status as BroadcastStatus)) {
      throw invalidPayload(`status must be one of ${BROADCAST_STATUSES.join(", ")}`);
    }
    const limit = query.limit || LIST_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT) throw invalidPayload(`limit must be between 1 and ${LIST_MAX_LIMIT}`);
    if (query.cursor && !CURSOR.test(query.cursor)) throw invalidPayload("cursor is not one this API returned");
    const rows = await this.deps.broadcasts.list(workspaceId, {
      status: query.status as BroadcastStatus | undefined,
      limit: limit + 1,
      before: query.cursor || undefined,
    });
    const hasMore = rows.length > limit;
    const items = rows.slice(0, limit);
    return { items, hasMore, cursor: hasMore ? items[items.length - 1].id : "" };
  }

  /**
   * Sends the broadcast to up to 10 workspace members with "[TEST] " before the subject,
   * compiled exactly as the real send would be (tracking, footer), merged with the
   * member's contact record when there is one. Not counted, status unchanged. With an A/B
   * test each member gets every variant ("[TEST A] ", "[TEST B] " …): the recipients of a
   * test get the variants, never the base fields alone.
   */
  async sendTest(workspaceId: string, id: string, emails: string[]): Promise<{ broadcast: Broadcast; sentTo: string[] }> {
    assertMaySend(await this.gate(workspaceId));
    const broadcast = await this.load(workspaceId, id);
    const addresses = [...new Set(emails.map((e) => String(e).trim()))];
    if (addresses.length < 1 || emails.length > TEST_MAX_RECIPIENTS || addresses.some((a) => !ADDRESS.test(a) || CONTROL.test(a))) {
      throw badRequest("invalid_test_recipients", `emails must hold 1 to ${TEST_MAX_RECIPIENTS} valid addresses`);
    }
    const members = new Set((await this.deps.directory.members(workspaceId)).map((m) => m.toLowerCase()));
    const notMembers = addresses.filter((a) => !members.has(a.toLowerCase()));
    if (notMembers.length > 0) {
      throw badRequest("test_recipients_not_members", `Test sends go to workspace members only; not members: ${notMembers.join(", ")}`, {
        extra: { notMembers: JSON.stringify(notMembers) },
      });
    }
    const testId = `${broadcast.id}${TEST_CONTENT_SEPARATOR}${this.deps.ids.unique()}`;
    const now = this.deps.clock.now();
    // One message per variant (an A/B test), else one of the broadcast itself; each its own
    // content entry, written before its jobs (the content store drops it after its max age;
    // nothing else needs it once the test mail went out).
    const copies = (broadcast.abTest?.variants.length ? broadcast.abTest.variants : [undefined]).map((v, n) => ({
      fields: v ? variantFields(broadcast, v) : broadcast,
      contentRef: contentRefOf(v ? `${testId}-v${n}` : testId),
      subjectPrefix: v ? `[TEST ${String.fromCharCode(65 + n)}] ` : TEST_SUBJECT_PREFIX,
      suffix: v ? `-v${n}` : "",
    }));
    const zone = await this.workspaceZone(workspaceId);
    const [contacts] = await Promise.all([
      Promise.all(addresses.map((a) => this.deps.directory.contactByEmail(workspaceId, a))),
      ...copies.map((c) => this.deps.renderer.compile(compileInputOf(c.fields, zone)).then((compiled) => this.deps.deliveryContent.put(workspaceId, c.contentRef, compiled))),
    ]);
    const domain = broadcast.fromEmail.slice(broadcast.fromEmail.lastIndexOf("@") + 1);
    await Promise.all(
      copies.flatMap((copy) => addresses.map((email, i) => {
        const contact = contacts[i];
        return this.deps.queue.publishJob({
          deliveryId: `${testId}-${i}${copy.suffix}`,
          workspaceId,
          source: "test",
          broadcastId: broadcast.id,
          messageId: this.deps.ids.messageId(domain),
          recipient: {
            email,
            contactId: contact?.id ?? "",
            variablesJson: variablesJson(contact ? { ...contact.properties, firstName: contact.firstName, lastName: contact.lastName } : {}),
          },
          fromEmail: broadcast.fromEmail,
          fromName: copy.fields.fromName,
          replyTo: broadcast.replyTo,
          contentRef: copy.contentRef,
          subjectPrefix: copy.subjectPrefix,
          enqueuedAt: now,
        });
      })),
    );
    return { broadcast, sentTo: addresses };
  }

  /**
   * DRAFT -> SCHEDULED: checks the method, the horizon and this month's usage, compiles
   * the content once (tracking, footer, preheader, text) and locks it, then a CAS.
   */
  /** `traceparent`: the schedule request's trace context (opaque; "" while tracing is off), kept for sending's traces to link to. */
  async schedule(workspaceId: string, id: string, input: { sendAt?: Date; deliveryMethod?: string; traceparent?: string }): Promise<{ broadcast: Broadcast; warnings: string[] }> {
    const ws = await this.gate(workspaceId);
    assertMaySend(ws);
    const broadcast = await this.load(workspaceId, id);
    if (broadcast.status !== "DRAFT") throw notSchedulable(broadcast.status);
    const now = this.deps.clock.now();
    const sendAt = input.sendAt && input.sendAt.getTime() > now.getTime() ? input.sendAt : now;
    if (sendAt.getTime() - now.getTime() > SCHEDULE_HORIZON_MS) {
      throw badRequest("send_at_out_of_range", "sendAt must be at most 90 days ahead");
    }
    const method = chooseMethod(input.deliveryMethod, ws.sendingAccountNew);
    await this.assertSender(workspaceId, broadcast.fromEmail);
    // The audience unit counts the audience from its indexes: the audience is streamed once, when sending starts.
    const [audience, left] = await Promise.all([
      this.deps.directory.audienceCount(workspaceId, broadcast.audience),
      this.deps.directory.usageLeft(workspaceId),
    ]);
    if (audience > left) {
      throw appError({
        code: "monthly_limit_reached",
        httpStatus: 403,
        message: `This broadcast would send ${audience} emails; ${Math.max(0, left)} are left in this month's limit`,
      });
    }
    const contentKey = `${broadcast.id}:${this.deps.ids.unique()}`;
    const zone = await this.workspaceZone(workspaceId);
    await this.deps.lockedContent.put(contentKey, workspaceId, await this.deps.renderer.compile(compileInputOf(broadcast, zone)));
    // An A/B test's variants are compiled now too, each locked beside the broadcast's content:
    // a variant that does not compile refuses the schedule, so none is sent half-built.
    const variants = broadcast.abTest?.variants ?? [];
    try {
      await Promise.all(
        variants.map(async (v, i) =>
          this.deps.lockedContent.put(variantContentKeyOf(contentKey, i), workspaceId, await this.deps.renderer.compile(compileInputOf(variantFields(broadcast, v), zone))),
        ),
      );
    } catch (err) {
      await this.dropLocked(contentKey, variants.length);
      throw err;
    }
    const scheduled = await this.deps.broadcasts.schedule(workspaceId, id, { scheduledAt: sendAt, deliveryMethod: method, contentKey, at: now, traceparent: input.traceparent || undefined });
    if (!scheduled) {
      // Another schedule (or nothing) won the race: this compilation is nobody's.
      await this.dropLocked(contentKey, variants.length);
      const current = await this.load(workspaceId, id);
      throw notSchedulable(current.status);
    }
    if (sendAt.getTime() <= now.getTime()) this.deps.onScheduled?.();
    return { broadcast: scheduled, warnings: htmlWarnings(scheduled.html) };
  }

  /**
   * SCHEDULED (not started) -> DRAFT, content unlocked; a CAS the start claim races. An A/B
   * test waiting for its winner (none chosen) stops instead: the rest is never sent and the
   * broadcast completes once the test share has settled (pauseReason `ab_test_cancelled`).
   */
  async cancel(workspaceId: string, id: string): Promise<Broadcast> {
    await this.gate(workspaceId);
    const now = this.deps.clock.now();
    const before = await this.deps.broadcasts.cancel(workspaceId, id, now);
    if (!before) {
      if (await this.deps.broadcasts.cancelAbWait(workspaceId, id, now, AB_CANCELLED)) {
        this.deps.logger.info({ broadcastId: id }, "A/B test cancelled during its wait; the rest is not sent");
        return this.load(workspaceId, id);
      }
      const current = await this.load(workspaceId, id);
      throw conflict(
        "broadcast_not_cancellable",
        `Only a SCHEDULED broadcast that has not started, or an A/B test waiting for its winner, can be cancelled; this one is ${current.status}`,
      );
    }
    await Promise.all([
      before.contentKey ? this.dropLocked(before.contentKey, before.abTest?.variants.length ?? 0) : undefined,
      // Sending never started, so the content store should hold nothing; best effort all the same.
      this.deps.deliveryContent.delete(workspaceId, contentRefOf(id)).catch(() => undefined),
      ...(before.abTest?.variants ?? []).map((_, i) => this.deps.deliveryContent.delete(workspaceId, variantContentRefOf(id, i)).catch(() => undefined)),
    ]);
    return this.load(workspaceId, id);
  }

  /**
   * A user's choice of an A/B test's winner while the broadcast waits for it (before the
   * automatic pick): the rest goes out with it at once. 409 `ab_winner_already_chosen` when
   * one was chosen, `ab_test_not_waiting` when the broadcast does not wait (no test, the test
   * share still going out, cancelled, completed).
   */
  async chooseWinner(workspaceId: string, id: string, variant: number, traceparent?: string): Promise<Broadcast> {
    await this.gate(workspaceId);
    const broadcast = await this.load(workspaceId, id);
    const ab = broadcast.abTest;
    if (ab && (!Number.isInteger(variant) || variant < 0 || variant >= ab.variants.length)) {
      throw invalidPayload(`variant must be the index of one of the ${ab.variants.length} variants (0 to ${ab.variants.length - 1})`);
    }
    if (!(await this.deps.broadcasts.chooseAbWinner(id, { workspaceId, winner: variant, by: "user", at: this.deps.clock.now(), traceparent: traceparent || undefined }))) {
      const current = await this.load(workspaceId, id);
      throw abWinnerRefusal(current);
    }
    this.deps.logger.info({ broadcastId: id, winner: variant }, "A/B winner chosen by a user");
    this.deps.onWinnerChosen?.();
    return this.load(workspaceId, id);
  }

  /** Best effort: the locked content of a schedule that did not hold (and its variants'). */
  private async dropLocked(contentKey: string, variants: number): Promise<void> {
    await Promise.all([
      this.deps.lockedContent.delete(contentKey).catch(() => undefined),
      ...Array.from({ length: variants }, (_, i) => this.deps.lockedContent.delete(variantContentKeyOf(contentKey, i)).catch(() => undefined)),
    ]);
  }

  private async checkContent(workspaceId: string, input: CreateInput) {
    const fields = validateCreate(input);
    const config = input.abTest ? validateAbTest(input.abTest, fields, this.deps.abMinWaitSeconds ?? AB_MIN_WAIT_SECONDS) : undefined;
    const abTest: AbTest | undefined = config ? draftAbTest(config) : undefined;
    await this.assertSender(workspaceId, fields.fromEmail);
    const customProperties = await this.deps.directory.customPropertySlugs(workspaceId);
    // The variants' merge variables count too: each is sent to part of the audience.
    const detections = await Promise.all(
      [fields, ...(config?.variants ?? []).map((v) => variantFields(fields, v))].map((f) =>
        this.deps.renderer.detectVariables({ html: f.html, subject: f.subject, previewText: f.previewText, customProperties }),
      ),
    );
    const variables = {
      detected: [...new Set(detections.flatMap((d) => d.detected))],
      unknown: [...new Set(detections.flatMap((d) => d.unknown))],
    };
    if (variables.unknown.length > 0 && !input.allowUnknownVariables) {
      throw appError({
        code: "broadcast_unknown_variables",
        httpStatus: 400,
        message: `Unknown merge variables: ${variables.unknown.join(", ")}. Use contact properties, or set allowUnknownVariables to render them empty.`,
        unknownVariables: variables.unknown,
      });
    }
    return { fields, variables, abTest };
  }

  private async load(workspaceId: string, id: string): Promise<Broadcast> {
    const broadcast = await this.deps.broadcasts.find(workspaceId, id);
    if (!broadcast) throw broadcastNotFound(id);
    return broadcast;
  }

  /** The workspace's zone, for Liquid's `date` where a contact has none (empty: UTC). */
  private async workspaceZone(workspaceId: string): Promise<string> {
    return (await this.deps.directory.workspace(workspaceId)).timezone || "";
  }

  private async assertSender(workspaceId: string, fromEmail: string): Promise<void> {
    let check;
    try {
      check = await this.deps.directory.checkSender(workspaceId, fromEmail);
    } catch (err) {
      const refusal = err as AppError;
      if (refusal?.code !== "invalid_from") throw err;
      check = { allowed: false, allowedEmails: refusal.details.allowedEmails ?? [], allowedDomains: refusal.details.allowedDomains ?? [] };
    }
    if (!check.allowed) {
      throw badRequest("campaigns/invalid_from_email", `${fromEmail} is not a verified sender address or on a verified domain`, {
        allowedEmails: check.allowedEmails,
        allowedDomains: check.allowedDomains,
      });
    }
  }

}

/** pauseReason of a broadcast whose A/B test was cancelled during its wait. */
export const AB_CANCELLED = "ab_test_cancelled";

function abWinnerRefusal(b: Broadcast): AppError {
  if (b.abTest?.winner !== undefined) {
    return conflict("ab_winner_already_chosen", `Variant ${b.abTest.winner} was chosen already (by ${b.abTest.winnerChosenBy})`);
  }
  const where = !b.abTest ? "this broadcast has no A/B test" : `this one is ${b.status}${b.abTest.state !== "draft" ? ` and its test is ${b.abTest.state}` : ""}`;
  return conflict("ab_test_not_waiting", `A winner can be chosen while the broadcast waits for one (its test share sent); ${where}`);
}

function notEditable(status: BroadcastStatus): AppError {
  return conflict("broadcast_not_editable", `Only a DRAFT broadcast can be edited; this one is ${status}`);
}

function notSchedulable(status: BroadcastStatus): AppError {
  return conflict("broadcast_not_schedulable", `Only a DRAFT broadcast can be scheduled; this one is ${status}`);
}

/** New sending accounts may only warm up; omitted means the safest available method. */
export function chooseMethod(requested: string | undefined, sendingAccountNew: boolean): DeliveryMethod {
  if (requested !== undefined && !DELIVERY_METHODS.includes(requested as DeliveryMethod)) {
    throw invalidPayload(`deliveryMethod must be one of ${DELIVERY_METHODS.join(", ")}`);
  }
  if (!requested) return sendingAccountNew ? "WARMUP" : "PROGRESSIVE";
  if (sendingAccountNew && requested !== "WARMUP") {
    throw badRequest("campaigns/delivery_method_not_available", `${requested} is not available for a new sending account; use WARMUP`);
  }
  return requested as DeliveryMethod;
}

export function htmlWarnings(html: string): string[] {
  return Buffer.byteLength(html, "utf8") > HTML_CLIP_BYTES ? [HTML_CLIP_WARNING] : [];
}

function compileInputOf(b: Broadcast, timeZone: string) {
  return {
    timeZone,
    workspaceId: b.workspaceId,
    contentId: b.id,
    subject: b.subject,
    html: b.html,
    text: b.text,
    previewText: b.previewText,
    trackClicks: b.settings.trackClicks,
    trackOpens: b.settings.trackOpens,
  };
}

function validateCreate(input: CreateInput) {
  const required = ["name", "subject", "fromEmail", "fromName", "html"] as const;
  for (const field of required) {
    if (typeof input[field] !== "string" || input[field].trim() === "") throw invalidPayload(`${field} is required`);
  }
  if (Buffer.byteLength(input.html, "utf8") > HTML_MAX_BYTES) {
    throw appError({ code: "broadcast_html_too_large", httpStatus: 413, message: `html is larger than ${HTML_MAX_BYTES} bytes` });
  }
  const replyTo = (input.replyTo ?? []).map((r) => String(r).trim()).filter(Boolean);
  for (const [field, value] of [["fromEmail", input.fromEmail], ["fromName", input.fromName], ["subject", input.subject], ["previewText", input.previewText ?? ""], ...replyTo.map((r) => ["replyTo", r])]) {
    if (CONTROL.test(value)) throw badRequest("header_injection", `${field} must not contain line breaks or control characters`);
  }
  if (!ADDRESS.test(input.fromEmail.trim())) throw invalidPayload("fromEmail must be an email address");
  const badReplyTo = replyTo.find((r) => !ADDRESS.test(r));
  if (badReplyTo) throw invalidPayload(`replyTo holds an invalid address: ${badReplyTo}`);
  return {
    name: input.name,
    subject: input.subject,
    previewText: input.previewText ?? "",
    fromEmail: input.fromEmail.trim(),
    fromName: input.fromName,
    html: input.html,
    text: input.text ?? "",
    replyTo,
  };
}

const AUDIENCE_MAX_GROUPS = 100;
const AUDIENCE_ID_MAX = 200;
const AUDIENCE_FILTER_MAX = 64 * 1024;

function audienceIds(value: unknown, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !v.trim() || v.length > AUDIENCE_ID_MAX)) {
    throw invalidPayload(`${field} must be a list of group ids or publicIds`);
  }
  if (value.length > AUDIENCE_MAX_GROUPS) throw invalidPayload(`${field} may name at most ${AUDIENCE_MAX_GROUPS} groups`);
  return value.length ? [...new Set(value.map((v: string) => v.trim()))] : undefined;
}

function audienceId(value: unknown, field: string): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (typeof value !== "string" || value.length > AUDIENCE_ID_MAX || CONTROL.test(value)) throw invalidPayload(`${field} must be an id`);
  return value.trim() || undefined;
}

function audienceFilter(value: unknown, field: string): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (typeof value !== "string" || value.length > AUDIENCE_FILTER_MAX) throw invalidPayload(`${field} must be a filter of at most ${AUDIENCE_FILTER_MAX} characters of JSON`);
  return value;
}

/**
 * The audience's shape: exactly one of all (true), groups, segmentId, filter; exclude and
 * topicId optional. Whether its groups, segment and topic exist and its filters are valid is
 * the audience unit's to say (it counts the audience on every write).
 */
export function validateAudience(input: AudienceInput | undefined): BroadcastAudience {
  if (!input || typeof input !== "object") throw invalidPayload("audience is required: { all: true }, { groups }, { segmentId } or { filter }");
  const groups = audienceIds(input.groups, "audience.groups");
  const segmentId = audienceId(input.segmentId, "audience.segmentId");
  const filterJson = audienceFilter(input.filterJson, "audience.filter");
  const forms = [input.all === true, groups !== undefined, segmentId !== undefined, filterJson !== undefined].filter(Boolean).length;
  if (forms !== 1) throw invalidPayload("audience must have exactly one of all (true), groups, segmentId, filter");
  const audience: BroadcastAudience = input.all === true ? { all: true } : groups ? { groups } : segmentId ? { segmentId } : { filterJson };
  if (input.exclude !== undefined && input.exclude !== null) {
    if (typeof input.exclude !== "object") throw invalidPayload("audience.exclude must be an object");
    const exclude = {
      groups: audienceIds(input.exclude.groups, "audience.exclude.groups"),
      segmentId: audienceId(input.exclude.segmentId, "audience.exclude.segmentId"),
      filterJson: audienceFilter(input.exclude.filterJson, "audience.exclude.filter"),
    };
    const given = Object.fromEntries(Object.entries(exclude).filter(([, v]) => v !== undefined));
    if (Object.keys(given).length) audience.exclude = given;
  }
  const topicId = audienceId(input.topicId, "audience.topicId");
  if (topicId) audience.topicId = topicId;
  return audience;
}

/** Merge values the renderer computes itself (the recipient's address and links): never sampled. */
const COMPUTED_VARIABLES = new Set(["email", "unsubscribeUrl", "manageUrl", "contactId"]);

/** A preview's stand-in values without a contact: each field's name in brackets. */
export function sampleVariables(names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((name) => !COMPUTED_VARIABLES.has(name)).map((name) => [name, `[${name}]`]));
}
