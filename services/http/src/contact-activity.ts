/**
 * A contact's activity: one newest-first timeline merged from what the units record by the
 * contact's id (GET /v1/contacts/:id/activity and the console's contact page).
 *
 * Sources, each read newest first by the contact's id (an index in every unit, never a scan):
 * - the audience unit's engagement records (AudienceService.ListContactEngagement): each message
 *   sent, opened, clicked or bounced, once per kind; a transactional email's record (status,
 *   subject) is looked up for the emails on the page;
 * - the audience unit's custom events of the contact (POST /v1/events);
 * - the automation unit's runs of the contact;
 * - the webhooks unit's deliveries of CONTACT_* events about it (the last 200: that RPC has no cursor);
 * - the contact record itself: its creation and its suppression (unsubscribe, bounce, complaint).
 *
 * The cursor holds each source's own cursor and how many of that page were shown already, so
 * every page is exact however the sources' pages line up.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ContactSource, SuppressionReason, type Contact } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { RunStatus } from "@mailroom/proto/automation/v1/automation_pb.js";
import { DeliveryState } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import type { GatewayDeps, RequestCallOptions } from "./deps.js";
import { refusal } from "./errors.js";

export const ACTIVITY_TYPES = [
  "email_sent", "email_opened", "email_clicked", "email_bounced", "event", "automation_run", "webhook_delivery",
  "contact_created", "unsubscribed", "suppressed",
] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/** One timeline entry as the API shows it (fields beyond type and occurredAt depend on the type). */
export interface ActivityItem {
  type: ActivityType;
  occurredAt: string;
  emailId?: string;
  broadcastId?: string;
  messageId?: string;
  emailStatus?: string;
  subject?: string;
  name?: string;
  properties?: Record<string, unknown>;
  automationId?: string;
  runId?: string;
  runStatus?: string;
  webhookId?: string;
  deliveryId?: string;
  eventType?: string;
  deliveryState?: string;
  attempts?: number;
  source?: string;
  reason?: string;
}

export const ACTIVITY_DEFAULT_LIMIT = 20;
export const ACTIVITY_MAX_LIMIT = 100;

interface SourcePage { items: ActivityItem[]; next: string; hasMore: boolean }
type Fetch = (cursor: string, limit: number) => Promise<SourcePage>;
/** A source's place: its page's cursor, how many of that page were shown, or done. */
type Place = { c: string; k: number } | "done";
const SOURCES = ["engagement", "events", "runs", "webhooks", "contact"] as const;
type SourceName = (typeof SOURCES)[number];
type State = Partial<Record<SourceName, Place>>;

const isoOf = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : new Date(0).toISOString());
const badCursor = () => refusal({ code: "invalid_request", status: 400, message: "cursor is not a cursor this list returned" });

function readCursor(cursor: string | undefined): State {
  if (!cursor) return {};
  try {
    const raw = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Record<string, unknown>;
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badCursor();
    const state: State = {};
    for (const [key, value] of Object.entries(raw)) {
      if (!(SOURCES as readonly string[]).includes(key)) throw badCursor();
      if (value === 0) state[key as SourceName] = "done";
      else if (Array.isArray(value) && typeof value[0] === "string" && Number.isInteger(value[1]) && (value[1] as number) >= 0) state[key as SourceName] = { c: value[0], k: value[1] as number };
      else throw badCursor();
    }
    return state;
  } catch {
    throw badCursor();
  }
}

function writeCursor(state: State): string {
  const raw: Record<string, unknown> = {};
  for (const [key, place] of Object.entries(state)) raw[key] = place === "done" ? 0 : [place!.c, place!.k];
  return Buffer.from(JSON.stringify(raw)).toString("base64url");
}

/** Reads one source lazily: its current page, then the next ones as the merge needs them. */
class Reader {
  private page: SourcePage | undefined;
  constructor(readonly name: SourceName, private readonly fetch: Fetch, private place: Place, private readonly want: number) {}

  /** The next item, loading pages as needed; undefined when the source has no more. */
  async head(): Promise<ActivityItem | undefined> {
    for (let guard = 0; guard < 20; guard++) {
      if (this.place === "done") return undefined;
      if (!this.page) this.page = await this.fetch(this.place.c, this.place.k + this.want);
      if (this.place.k < this.page.items.length) return this.page.items[this.place.k];
      if (!this.page.hasMore || !this.page.next) {
        this.place = "done";
        return undefined;
      }
      this.place = { c: this.page.next, k: 0 };
      this.page = undefined;
    }
    return undefined;
  }

  take(): void {
    if (this.place !== "done") this.place = { c: this.place.c, k: this.place.k + 1 };
  }

  get state(): Place { return this.place; }
}

export interface ActivityPage { items: ActivityItem[]; cursor: string | null; hasMore: boolean }

/**
 * One page of the contact's activity. The contact must be loaded first (its workspace checked):
 * every call names the workspace of the caller.
 */
export async function contactActivity(
  deps: Pick<GatewayDeps, "clients">, workspaceId: string, contact: Contact, page: { limit?: number; cursor?: string }, options: RequestCallOptions,
): Promise<ActivityPage> {
  const limit = Math.min(Math.max(page.limit ?? ACTIVITY_DEFAULT_LIMIT, 1), ACTIVITY_MAX_LIMIT);
  const state = readCursor(page.cursor);
  const { clients } = deps;
  const contactId = contact.id;
  const fetchers: Record<SourceName, Fetch> = {
    engagement: async (cursor, n) => {
      const res = await clients.audiences.listContactEngagement({ workspaceId, contactId, page: { cursor, limit: Math.min(n, 200) } }, options);
      return {
        items: res.engagements.map((e) => ({
          type: `email_${e.kind === "delivered" ? "sent" : e.kind}` as ActivityType,
          occurredAt: isoOf(e.at),
          ...(e.messageId.startsWith("trs_") ? { emailId: e.messageId } : e.broadcastId ? {} : { messageId: e.messageId }),
          ...(e.broadcastId ? { broadcastId: e.broadcastId } : {}),
        })),
        next: res.page?.nextCursor ?? "", hasMore: res.page?.hasMore ?? false,
      };
    },
    events: async (cursor, n) => {
      const res = await clients.contacts.listContactEvents({ workspaceId, contactId, page: { cursor, limit: Math.min(n, 100) } }, options);
      return {
        items: res.events.map((e) => ({
          type: "event" as const, occurredAt: isoOf(e.timestamp ?? e.receivedAt), name: e.name,
          ...(Object.keys(e.properties ?? {}).length ? { properties: e.properties as Record<string, unknown> } : {}),
        })),
        next: res.page?.nextCursor ?? "", hasMore: res.page?.hasMore ?? false,
      };
    },
    runs: async (cursor, n) => {
      const res = await clients.automation.listRuns({ workspaceId, contactId, page: { cursor, limit: Math.min(n, 100) } }, options);
      return {
        items: res.runs.map((r) => ({
          type: "automation_run" as const, occurredAt: isoOf(r.startedAt), automationId: r.automationId, runId: r.id, runStatus: RunStatus[r.status] ?? "UNSPECIFIED",
        })),
        next: res.page?.nextCursor ?? "", hasMore: res.page?.hasMore ?? false,
      };
    },
    // No cursor in this RPC: its newest 200 are one page.
    webhooks: async () => {
      const res = await clients.webhooks.listContactDeliveries({ workspaceId, contactId, limit: 200 }, options);
      return {
        items: res.deliveries.map((d) => ({
          type: "webhook_delivery" as const, occurredAt: isoOf(d.createdAt), webhookId: d.webhookId, deliveryId: d.id,
          eventType: d.eventType, deliveryState: DeliveryState[d.state] ?? "UNSPECIFIED", attempts: d.attempts,
        })),
        next: "", hasMore: false,
      };
    },
    contact: async () => {
      const items: ActivityItem[] = [];
      const { suppressed } = await clients.contacts.checkSuppression({ workspaceId, emails: [contact.email] }, options);
      const s = suppressed[0];
      if (s?.createdAt) {
        items.push(s.reason === SuppressionReason.UNSUBSCRIBED
          ? { type: "unsubscribed", occurredAt: isoOf(s.createdAt), ...(s.detail ? { reason: s.detail } : {}) }
          : { type: "suppressed", occurredAt: isoOf(s.createdAt), reason: (SuppressionReason[s.reason] ?? "UNSPECIFIED").toLowerCase() });
      }
      if (contact.createdAt) items.push({ type: "contact_created", occurredAt: isoOf(contact.createdAt), source: ContactSource[contact.source] ?? "UNSPECIFIED" });
      items.sort((a, b) => b.occurredAt.localeCompare(a.occurredAt));
      return { items, next: "", hasMore: false };
    },
  };

  const readers = SOURCES.map((name) => new Reader(name, fetchers[name], state[name] ?? { c: "", k: 0 }, limit));
  const items: ActivityItem[] = [];
  while (items.length < limit) {
    const heads = await Promise.all(readers.map((r) => r.head()));
    let best = -1;
    heads.forEach((h, i) => {
      if (h && (best < 0 || h.occurredAt > heads[best]!.occurredAt)) best = i;
    });
    if (best < 0) break;
    items.push(heads[best]!);
    readers[best].take();
  }
  const hasMore = (await Promise.all(readers.map((r) => r.head()))).some(Boolean);
  await addEmailRecords(deps, workspaceId, items, options);
  const next: State = {};
  for (const r of readers) next[r.name] = r.state;
  return { items, hasMore, cursor: hasMore ? writeCursor(next) : null };
}

/** The status and subject of the transactional emails on the page (an erased or unknown one keeps neither). */
async function addEmailRecords(deps: Pick<GatewayDeps, "clients">, workspaceId: string, items: ActivityItem[], options: RequestCallOptions): Promise<void> {
  const ids = [...new Set(items.map((i) => i.emailId).filter((id): id is string => !!id))];
  const found = new Map<string, { status: string; subject: string }>();
  await Promise.all(ids.map(async (id) => {
    try {
      const { email } = await deps.clients.email.getEmail({ workspaceId, id }, options);
      if (email) found.set(id, { status: EmailStatus[email.status] ?? "UNSPECIFIED", subject: email.subject || email.template });
    } catch {
      // Erased or not found: the entry stands without it.
    }
  }));
  for (const item of items) {
    const record = item.emailId ? found.get(item.emailId) : undefined;
    if (record) {
      item.emailStatus = record.status;
      if (record.subject) item.subject = record.subject;
    }
  }
}
