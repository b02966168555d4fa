import { describe, expect, it } from "vitest";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { audienceRoutes } from "./audience-routes.js";
import type { Audiences } from "./domain/audiences.js";
import type { Segments } from "./domain/segments.js";
import type { Contact } from "@mailroom/records/model.js";

const contact = (i: number): Contact => ({
  _id: `ctc_${i}`,
  workspaceId: "ws",
  email: `c${i}@example.test`,
  emailLower: `c${i}@example.test`,
  firstName: `C${i}`,
  lastName: "Doe",
  timezone: "Europe/Paris",
  status: "SUBSCRIBED",
  source: "PUBLIC_API",
  properties: { plan: "gold", seats: i, tags: ["a", "b"] },
  createdAt: new Date("2026-01-01T00:00:00Z"),
  updatedAt: new Date("2026-01-02T00:00:00Z"),
});

/** Audiences that stream two pages of the given contacts, whatever was asked. */
const audiences = { async *stream() { yield [contact(1), contact(2)]; yield [contact(3)]; } } as unknown as Audiences;

function client() {
  return createClient(AudienceService, createRouterTransport(audienceRoutes({} as Segments, audiences)));
}

describe("StreamAudience", () => {
  it("answers slim members with the properties as JSON when asked for members only", async () => {
    const pages = [];
    for await (const res of client().streamAudience({ workspaceId: "ws", audience: { all: true }, membersOnly: true })) pages.push(res);
    expect(pages.map((p) => p.contacts.length)).toEqual([0, 0]);
    expect(pages.map((p) => p.members.map((m) => m.id))).toEqual([["ctc_1", "ctc_2"], ["ctc_3"]]);
    const [first] = pages[0].members;
    expect({ ...first, $typeName: undefined }).toEqual({
      $typeName: undefined, id: "ctc_1", email: "c1@example.test", firstName: "C1", lastName: "Doe", timezone: "Europe/Paris",
      propertiesJson: JSON.stringify({ plan: "gold", seats: 1, tags: ["a", "b"] }),
    });
  });

  it("answers whole contacts otherwise", async () => {
    const pages = [];
    for await (const res of client().streamAudience({ workspaceId: "ws", audience: { all: true } })) pages.push(res);
    expect(pages.map((p) => p.members.length)).toEqual([0, 0]);
    expect(pages[0].contacts[0]).toMatchObject({ id: "ctc_1", email: "c1@example.test", subscribed: true, properties: { plan: "gold", seats: 1 } });
  });
});

describe("ListContactEngagement", () => {
  it("pages one contact's records newest first over ties, in its workspace only", async () => {
    const { openMemoryStore } = await import("@mailroom/store/open.js");
    const { EngagementStore } = await import("./adapters/engagement-store.js");
    const engagement = await EngagementStore.open(openMemoryStore());
    const same = new Date("2026-03-10T12:00:00Z");
    const records = [
      { kind: "delivered" as const, messageId: "trs_a", at: new Date("2026-03-01T12:00:00Z") },
      { kind: "opened" as const, messageId: "trs_a", at: same },
      { kind: "clicked" as const, messageId: "trs_a", at: same },
      { kind: "delivered" as const, messageId: "cmp_b", broadcastId: "cmp_b", at: same },
      { kind: "bounced" as const, messageId: "trs_c", at: new Date("2026-03-20T12:00:00Z") },
    ];
    for (const r of records) await engagement.record({ workspaceId: "ws", contactId: "ctc_1", ...r });
    await engagement.record({ workspaceId: "ws", contactId: "ctc_2", kind: "opened", messageId: "trs_x", at: new Date("2026-04-01T00:00:00Z") });
    await engagement.record({ workspaceId: "other", contactId: "ctc_1", kind: "opened", messageId: "trs_y", at: new Date("2026-04-01T00:00:00Z") });
    const c = createClient(AudienceService, createRouterTransport(audienceRoutes({} as Segments, audiences, engagement)));
    const seen: string[] = [];
    let cursor = "";
    let pages = 0;
    do {
      const res = await c.listContactEngagement({ workspaceId: "ws", contactId: "ctc_1", page: { limit: 2, cursor } });
      seen.push(...res.engagements.map((e) => `${e.kind}:${e.messageId}`));
      cursor = res.page?.hasMore ? res.page.nextCursor : "";
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    expect(seen[0]).toBe("bounced:trs_c");
    expect(seen[4]).toBe("delivered:trs_a");
    await expect(c.listContactEngagement({ workspaceId: "ws", contactId: "ctc_1", page: { cursor: "nope" } })).rejects.toThrow(); // invalid_request once the server maps domain errors
  });

  it("is unimplemented without an engagement store", async () => {
    await expect(client().listContactEngagement({ workspaceId: "ws", contactId: "ctc_1" })).rejects.toThrow(/not kept/);
  });
});

describe("PlanBestHours", () => {
  it("answers each contact's due time after the window's start (-1 without a plan) with its basis, and refuses a call too big or without a start", async () => {
    const { openMemoryStore } = await import("@mailroom/store/open.js");
    const { EngagementStore } = await import("./adapters/engagement-store.js");
    const { timestampFromDate } = await import("@bufbuild/protobuf/wkt");
    const { BestHourBasis } = await import("@mailroom/proto/audience/v1/audiences_pb.js");
    const engagement = await EngagementStore.open(openMemoryStore());
    // Opens at hh:01 UTC on the 3 days before now: thin history, the hour of the day. The hour is
    // five from now's, so the plan never falls in the current hour (whose answer is "now").
    const now = Date.now();
    const hour = (new Date(now).getUTCHours() + 5) % 24;
    const today19 = Math.floor(now / 86_400_000) * 86_400_000 + hour * 3_600_000;
    for (let d = 1; d <= 3; d++) await engagement.record({ workspaceId: "ws", contactId: "ctc_1", kind: "opened", messageId: `trs_${d}`, at: new Date(today19 - d * 86_400_000 + 60_000) });
    const c = createClient(AudienceService, createRouterTransport(audienceRoutes({} as Segments, audiences, engagement)));
    const windowStart = now;
    const res = await c.planBestHours({ workspaceId: "ws", windowStart: timestampFromDate(new Date(windowStart)), defaultTimeZone: "UTC", contactIds: ["ctc_1", "ctc_2"], timeZones: ["", "Europe/Paris"] });
    const due = today19 >= windowStart ? today19 : today19 + 86_400_000;
    expect(res.dueInMs).toEqual([Math.max(due, windowStart) - windowStart, -1]);
    expect(res.basis).toEqual([BestHourBasis.DAY, BestHourBasis.NONE]);
    expect(res.events).toEqual([3, 0]);
    await expect(c.planBestHours({ workspaceId: "ws", windowStart: timestampFromDate(new Date()), contactIds: Array.from({ length: 5_001 }, (_, i) => `ctc_${i}`) })).rejects.toThrow(); // invalid_request once the server maps domain errors
    await expect(c.planBestHours({ workspaceId: "ws", contactIds: ["ctc_1"] })).rejects.toThrow();
    // Without an engagement store: no plans.
    expect((await client().planBestHours({ workspaceId: "ws", windowStart: timestampFromDate(new Date()), contactIds: ["ctc_1"] })).dueInMs).toEqual([-1]);
  });
});
