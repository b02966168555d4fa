import { createHash } from "node:crypto";
import type { Collection, Filter, Store } from "@mailroom/store/port.js";
import type { EmailOutcomes, OutcomeEventType } from "../domain/model.js";
import type {
  DailyStatsRow,
  Milestone,
  OutcomeChange,
  OutcomeStore,
  StatsCounters,
  StatsStore,
  StatsTarget,
} from "../domain/ports.js";

/*
 * Per-email outcomes live on the email's own document (collection `emails`, field `out`),
 * next to `applied`, the email's most recent event ids: one atomic update both checks the
 * id and counts the event. Daily stats live in `email_stats`, one document per
 * (workspace, UTC day, groupBy), maintained with $inc upserts.
 */

/** Event ids remembered per email. Redeliveries come within minutes; 64 covers any open/click storm of that window. */
export const APPLIED_EVENTS_KEPT = 64;

interface MilestoneDoc {
  eventId: string;
  at: Date;
  counted: boolean;
  /** The delivery route of the event that reached it (DESIGN §9.7). */
  route?: string;
}

interface LinkDoc {
  url: string;
  clicks: number;
  lastAt: Date;
}

/** The stored form of EmailOutcomes (inside the email document). */
export interface OutcomesDoc {
  opens?: number;
  clicks?: number;
  lastOpenedAt?: Date;
  lastClickedAt?: Date;
  bounceType?: "hard" | "soft";
  /** Keyed by a hash of the URL (URLs are not valid field names). */
  links?: Record<string, LinkDoc>;
  m?: Partial<Record<Milestone, MilestoneDoc>>;
  lastEvent?: OutcomeEventType;
  lastEventAt?: Date;
  /** Opens and clicks whose stats count is not yet taken, by event key (see OutcomeStore.takeOwedCount); entries leave when taken. */
  owed?: Record<string, true>;
  /** The route that last carried or tried the message. */
  route?: string;
  deferrals?: number;
  lastDeferredAt?: Date;
  lastDeferredRoute?: string;
  lastDeferredDetail?: string;
  /** A relay provider's confirmation of delivery (MAIL_EVENT_TYPE_DELIVERED). */
  confirmedAt?: Date;
  confirmedRoute?: string;
  /** Replies received to it (MAIL_EVENT_TYPE_REPLIED), the latest one's time and received email id. */
  replies?: number;
  lastRepliedAt?: Date;
  lastReplyId?: string;
}

type EmailOutcomeDoc = {
  _id: string;
  workspaceId: string;
  groupBy?: string;
  dueAt: Date;
  createdAt: Date;
  applied?: string[];
  out?: OutcomesDoc;
};

/** URLs and event ids as field names (they may hold dots or `$`). */
const linkKey = (url: string) => createHash("sha256").update(url).digest("hex").slice(0, 16);
const eventKey = (eventId: string) => createHash("sha256").update(eventId).digest("hex").slice(0, 16);

/** The public outcomes of a stored email (absent before its first event). */
export function outcomesOf(out: OutcomesDoc | undefined): EmailOutcomes | undefined {
  if (!out) return undefined;
  const at = (m: Milestone) => out.m?.[m]?.at;
  const outcomes: EmailOutcomes = {
    opens: out.opens ?? 0,
    clicks: out.clicks ?? 0,
    links: Object.values(out.links ?? {})
      .map((l) => ({ url: l.url, clicks: l.clicks, lastClickedAt: l.lastAt }))
      .sort((a, b) => b.clicks - a.clicks || a.url.localeCompare(b.url)),
  };
  const dates: Array<[keyof EmailOutcomes, Date | undefined]> = [
    ["firstOpenedAt", at("opened")],
    ["lastOpenedAt", out.lastOpenedAt],
    ["firstClickedAt", at("clicked")],
    ["lastClickedAt", out.lastClickedAt],
    ["deliveredAt", at("delivered")],
    ["bouncedAt", at("bounced")],
    ["failedAt", at("failed")],
    ["complainedAt", at("complained")],
    ["unsubscribedAt", at("unsubscribed")],
  ];
  for (const [name, value] of dates) if (value) (outcomes as unknown as Record<string, Date>)[name] = value;
  if (out.bounceType) outcomes.bounceType = out.bounceType;
  if (out.lastEvent && out.lastEventAt) outcomes.lastEvent = { type: out.lastEvent, at: out.lastEventAt };
  if (out.route) outcomes.route = out.route;
  const routeOf = (m: Milestone) => out.m?.[m]?.route;
  if (routeOf("delivered")) outcomes.deliveredRoute = routeOf("delivered");
  if (routeOf("bounced")) outcomes.bouncedRoute = routeOf("bounced");
  if (routeOf("failed")) outcomes.failedRoute = routeOf("failed");
  if (out.deferrals && out.lastDeferredAt) {
    outcomes.deferrals = out.deferrals;
    outcomes.lastDeferral = { at: out.lastDeferredAt, route: out.lastDeferredRoute || undefined, detail: out.lastDeferredDetail || undefined };
  }
  if (out.confirmedAt) outcomes.confirmed = { at: out.confirmedAt, route: out.confirmedRoute || undefined };
  if (out.replies && out.lastRepliedAt) {
    outcomes.replies = out.replies;
    outcomes.lastReply = { at: out.lastRepliedAt, receivedId: out.lastReplyId ?? "" };
  }
  return outcomes;
}

export class CollectionOutcomeStore implements OutcomeStore {
  private readonly emails: Collection<EmailOutcomeDoc>;

  constructor(store: Store) {
    this.emails = store.collection<EmailOutcomeDoc>("emails");
  }

  async applyOnce(emailId: string, eventId: string, change: OutcomeChange): Promise<{ applied: boolean; target: StatsTarget } | null> {
    const set: Record<string, unknown> = {};
    const inc: Record<string, number> = {};
    if (change.confirmed) {
      set["out.confirmedAt"] = change.at;
      set["out.confirmedRoute"] = change.route ?? "";
    } else if (change.route) {
      set["out.route"] = change.route;
    }
    if (change.deferral) {
      inc["out.deferrals"] = 1;
      set["out.lastDeferredAt"] = change.at;
      set["out.lastDeferredRoute"] = change.route ?? "";
      set["out.lastDeferredDetail"] = change.deferral.detail ?? "";
    }
    if (change.open || change.click) set[`out.owed.${eventKey(eventId)}`] = true;
    if (change.open) {
      inc["out.opens"] = 1;
      set["out.lastOpenedAt"] = change.at;
    }
    if (change.click) {
      const key = linkKey(change.click.url);
      inc["out.clicks"] = 1;
      inc[`out.links.${key}.clicks`] = 1;
      set[`out.links.${key}.url`] = change.click.url;
      set[`out.links.${key}.lastAt`] = change.at;
      set["out.lastClickedAt"] = change.at;
    }
    if (change.bounce) set["out.bounceType"] = change.bounce.hard ? "hard" : "soft";
    if (change.reply) {
      inc["out.replies"] = 1;
      set["out.lastRepliedAt"] = change.at;
      set["out.lastReplyId"] = change.reply.receivedId;
    }
    const apply = (filter: Filter, fields: Record<string, unknown>) =>
      this.emails.findOneAndUpdate(
        { _id: emailId, applied: { $ne: eventId }, ...filter },
        {
          ...(Object.keys(fields).length ? { $set: fields } : {}),
          ...(Object.keys(inc).length ? { $inc: inc } : {}),
          $push: { applied: { $each: [eventId], $slice: -APPLIED_EVENTS_KEPT } },
        },
        { returnDocument: "after" },
      );
    // Events are consumed concurrently, so one can arrive after a later one (a provider's
    // deferral behind our own DELIVERED): the latest event is the latest by time, not by
    // arrival. The usual in-order event is one write; an older one takes a second without it.
    let updated = change.type
      ? await apply(
          { $or: [{ "out.lastEventAt": { $exists: false } }, { "out.lastEventAt": { $lte: change.at } }] },
          { ...set, "out.lastEvent": change.type, "out.lastEventAt": change.at },
        )
      : null;
    updated ??= await apply({}, set);
    if (updated) return { applied: true, target: targetOf(updated) };
    const existing = await this.emails.findOne({ _id: emailId });
    return existing ? { applied: false, target: targetOf(existing) } : null;
  }

  async claimAndCount(emailId: string, milestone: Milestone, eventId: string, at: Date, route?: string): Promise<boolean> {
    const path = `out.m.${milestone}`;
    const claim: MilestoneDoc = route ? { eventId, at, counted: false, route } : { eventId, at, counted: false };
    await this.emails.updateOne({ _id: emailId, [path]: { $exists: false } }, { $set: { [path]: claim } });
    const res = await this.emails.updateOne(
      { _id: emailId, [`${path}.eventId`]: eventId, [`${path}.counted`]: false },
      { $set: { [`${path}.counted`]: true } },
    );
    return res.matchedCount === 1;
  }

  async takeOwedCount(emailId: string, eventId: string): Promise<boolean> {
    const path = `out.owed.${eventKey(eventId)}`;
    const res = await this.emails.updateOne({ _id: emailId, [path]: true }, { $unset: { [path]: "" } });
    return res.matchedCount === 1;
  }
}

function targetOf(doc: EmailOutcomeDoc): StatsTarget {
  return { workspaceId: doc.workspaceId, groupBy: doc.groupBy ?? "", sentAt: new Date(doc.dueAt ?? doc.createdAt) };
}

type StatsDoc = {
  _id: string;
  workspaceId: string;
  day: string;
  groupBy: string;
  c?: Partial<StatsCounters>;
};

/** What tagged stats read of an email. */
type TaggedEmailDoc = { _id: string; groupBy?: string; dueAt?: Date; createdAt: Date; out?: OutcomesDoc };

const DAY_MS = 24 * 3600_000;
/** An email is due at most this long after it was created (the scheduling horizon). */
const DUE_HORIZON_MS = 91 * DAY_MS;
const MILESTONES: Milestone[] = ["sent", "delivered", "bounced", "hardBounced", "failed", "complained", "opened", "clicked", "unsubscribed"];

export class CollectionStatsStore implements StatsStore {
  private readonly stats: Collection<StatsDoc>;
  private readonly emails: Collection<TaggedEmailDoc>;

  constructor(store: Store) {
    this.stats = store.collection<StatsDoc>("email_stats");
    this.emails = store.collection<TaggedEmailDoc>("emails");
  }

  /**
   * Counted from the tagged emails themselves: the daily counters have no tag dimension (an
   * email carries up to 10 tags, and a filter asks for all of several), so each matching
   * email of the range is one row with the milestones it reached, on its stats day (when it
   * was due), read through the (workspaceId, createdAt) index.
   */
  async taggedRows(workspaceId: string, fromDay: string, toDay: string, tags: string[], groupBy?: string): Promise<DailyStatsRow[]> {
    const from = new Date(`${fromDay}T00:00:00Z`);
    const until = new Date(new Date(`${toDay}T00:00:00Z`).getTime() + DAY_MS);
    const docs = await this.emails.find(
      {
        workspaceId,
        createdAt: { $gte: new Date(from.getTime() - DUE_HORIZON_MS), $lt: until },
        dueAt: { $gte: from, $lt: until },
        $and: tags.map((tag) => ({ tagKeys: tag })),
        ...(groupBy !== undefined ? { groupBy: groupBy === "" ? { $exists: false } : groupBy } : {}),
      },
      { projection: { groupBy: 1, dueAt: 1, createdAt: 1, out: 1 } },
    );
    return docs.map((doc) => {
      const counters: Partial<StatsCounters> = {};
      for (const m of MILESTONES) if (doc.out?.m?.[m]) counters[m] = 1;
      if (doc.out?.opens) counters.opens = doc.out.opens;
      if (doc.out?.clicks) counters.clicks = doc.out.clicks;
      return { day: new Date(doc.dueAt ?? doc.createdAt).toISOString().slice(0, 10), groupBy: doc.groupBy ?? "", counters };
    });
  }

  async init(): Promise<void> {
    // Range reads per workspace; one document per (workspace, day, groupBy), so small.
    await this.stats.createIndex({ keys: { workspaceId: 1, day: 1 } });
  }

  async increment(workspaceId: string, day: string, groupBy: string, by: Partial<StatsCounters>): Promise<void> {
    const inc: Record<string, number> = {};
    for (const [name, value] of Object.entries(by)) if (value) inc[`c.${name}`] = value;
    if (!Object.keys(inc).length) return;
    await this.stats.updateOne(
      { _id: JSON.stringify([workspaceId, day, groupBy]) },
      { $inc: inc, $setOnInsert: { workspaceId, day, groupBy } },
      { upsert: true },
    );
  }

  async rows(workspaceId: string, fromDay: string, toDay: string, groupBy?: string): Promise<DailyStatsRow[]> {
    const docs = await this.stats.find({
      workspaceId,
      day: { $gte: fromDay, $lte: toDay },
      ...(groupBy !== undefined ? { groupBy } : {}),
    });
    return docs.map((d) => ({ day: d.day, groupBy: d.groupBy, counters: d.c ?? {} }));
  }
}
