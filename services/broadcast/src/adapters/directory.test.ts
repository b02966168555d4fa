import { describe, expect, it } from "vitest";
import { createClient, type Transport } from "@connectrpc/connect";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AudienceService } from "@mailroom/proto/audience/v1/audiences_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { notFound } from "@mailroom/kit/errors.js";
import { DirectoryClient } from "./directory.js";
import type { Contact } from "../domain/ports.js";

const contacts = Array.from({ length: 7 }, (_, i) => ({
  id: `ctc_${i}`,
  email: `c${i}@example.test`,
  firstName: `C${i}`,
  timezone: i === 0 ? "Asia/Tokyo" : "",
  subscribed: i !== 3,
  properties: { plan: "pro" },
}));

/** The adapter over one in-memory transport serving the accounts and audience services (AudienceService when `withAudiences`). */
function clientsOf(transport: Transport, withAudiences = false) {
  return {
    accounts: createClient(AccountsService, transport),
    contacts: createClient(ContactService, transport),
    ...(withAudiences ? { audiences: createClient(AudienceService, transport) } : {}),
  };
}

function directory() {
  const calls: string[] = [];
  const transport = memoryTransport(({ service }) => {
    service(AccountsService, {
      getWorkspace(req) {
        calls.push("getWorkspace");
        return { workspace: { id: req.workspaceId, timezone: "Europe/Paris", flags: { broadcastEarlyAccess: true, emailApiAddon: false, verified: true }, sendingAccountNew: true } };
      },
    });
    service(ContactService, {
      async *streamContacts(req) {
        calls.push(`stream subscribedOnly=${req.subscribedOnly}`);
        for (let i = 0; i < contacts.length; i += 3) yield { contacts: contacts.slice(i, i + 3) };
      },
      listContacts(req) {
        calls.push(`list subscribedOnly=${req.subscribedOnly} count=${req.includeCount} limit=${req.page?.limit}`);
        const matching = contacts.filter((c) => !req.subscribedOnly || c.subscribed);
        return { contacts: matching.slice(0, req.page?.limit || 25), page: { hasMore: matching.length > 1, nextCursor: "" }, totalCount: req.includeCount ? BigInt(matching.length) : undefined };
      },
      getContact(req) {
        if (req.email !== "c1@example.test") throw notFound("contact_not_found", "no");
        return { contact: contacts[1] };
      },
      checkSuppression(req) {
        calls.push(`checkSuppression ${req.emails.length}`);
        return { suppressed: req.emails.filter((e) => e.startsWith("gone")).map((email) => ({ email: email.toUpperCase(), reason: SuppressionReason.HARD_BOUNCE })) };
      },
    });
  });
  return { dir: new DirectoryClient(clientsOf(transport), 60_000), calls };
}

describe("directory adapter (accounts and audience)", () => {
  it("reads workspace flags once per cache period", async () => {
    const { dir, calls } = directory();
    expect(await dir.workspace("ws")).toEqual({ id: "ws", timezone: "Europe/Paris", broadcastEarlyAccess: true, emailApiAddon: false, verified: true, sendingAccountNew: true, sendingPaused: false, banned: false, holdReason: "" });
    await dir.workspace("ws");
    expect(calls.filter((c) => c === "getWorkspace")).toHaveLength(1);
  });

  it("streams the subscribed audience in id order, resuming after a cursor", async () => {
    const { dir, calls } = directory();
    const all: string[] = [];
    for await (const batch of dir.subscribedContacts("ws", { all: true })) all.push(...batch.map((c) => c.id));
    expect(all).toEqual(["ctc_0", "ctc_1", "ctc_2", "ctc_4", "ctc_5", "ctc_6"]);
    expect(calls).toContain("stream subscribedOnly=true");
    const rest: string[] = [];
    for await (const batch of dir.subscribedContacts("ws", { all: true }, "ctc_4")) rest.push(...batch.map((c) => c.id));
    expect(rest).toEqual(["ctc_5", "ctc_6"]);
  });

  it("answers null for an unknown contact, and lowercases suppressed addresses in batches of 10,000", async () => {
    const { dir, calls } = directory();
    expect(await dir.contactByEmail("ws", "nobody@example.test")).toBeNull();
    expect((await dir.contactByEmail("ws", "c1@example.test"))?.firstName).toBe("C1");
    const emails = Array.from({ length: 12_000 }, (_, i) => (i === 11_999 ? "gone@example.test" : `a${i}@example.test`));
    expect([...(await dir.suppressed("ws", emails))]).toEqual(["gone@example.test"]);
    expect(calls.filter((c) => c.startsWith("checkSuppression"))).toEqual(["checkSuppression 10000", "checkSuppression 2000"]);
  });

  it("counts the audience with one ListContacts total (one contact listed), never a stream", async () => {
    const { dir, calls } = directory();
    expect(await dir.audienceCount("ws", { all: true })).toBe(6);
    expect(calls).toEqual(["list subscribedOnly=true count=true limit=1"]);
  });

  it("asks the AudienceService for every audience: the form as given, resumed by the audience unit after the cursor; its refusals as domain errors", async () => {
    const requests: unknown[] = [];
    const transport = memoryTransport(({ service }) => {
      service(AudienceService, {
        countAudience(req) {
          requests.push({ count: req.audience });
          if (req.audience?.segmentId === "seg_gone") throw badRequest("audience_not_found", "segmentId: segment \"seg_gone\" not found");
          return { count: 2n };
        },
        async *streamAudience(req) {
          requests.push({ stream: req.audience, afterId: req.afterId, missingGroupsEmpty: req.missingGroupsEmpty, membersOnly: req.membersOnly });
          const page = contacts.filter((c) => c.id > req.afterId).slice(0, 2);
          yield { members: page.map((c) => ({ id: c.id, email: c.email, firstName: c.firstName, timezone: c.timezone, propertiesJson: JSON.stringify(c.properties) })) };
        },
      });
    });
    const dir = new DirectoryClient(clientsOf(transport, true), 60_000);
    const audience = { groups: ["vip"], exclude: { filterJson: '{"properties.plan":"free"}' }, topicId: "top_1" };
    expect(await dir.audienceCount("ws", audience)).toBe(2);
    const streamed: Contact[] = [];
    for await (const batch of dir.subscribedContacts("ws", audience, "ctc_2")) streamed.push(...batch);
    expect(streamed).toEqual([
      { id: "ctc_3", email: "c3@example.test", firstName: "C3", lastName: "", timezone: "", properties: { plan: "pro" } },
      { id: "ctc_4", email: "c4@example.test", firstName: "C4", lastName: "", timezone: "", properties: { plan: "pro" } },
    ]);
    expect(requests).toMatchObject([
      { count: { all: false, groups: ["vip"], segmentId: "", filterJson: "", exclude: { groups: [], filterJson: '{"properties.plan":"free"}' }, topicId: "top_1" } },
      { stream: { groups: ["vip"], topicId: "top_1" }, afterId: "ctc_2", missingGroupsEmpty: true, membersOnly: true },
    ]);
    await expect(dir.audienceCount("ws", { segmentId: "seg_gone" })).rejects.toMatchObject({ code: "audience_not_found", httpStatus: 400 });
  });

  it("reads whole contacts from an AudienceService that answers StreamAudience without members (one from before members_only)", async () => {
    const transport = memoryTransport(({ service }) => {
      service(AudienceService, {
        async *streamAudience() {
          yield { contacts: contacts.slice(0, 2) };
        },
      });
    });
    const dir = new DirectoryClient(clientsOf(transport, true), 60_000);
    const streamed: Contact[] = [];
    for await (const batch of dir.subscribedContacts("ws", { groups: ["vip"] })) streamed.push(...batch);
    expect(streamed.map((c) => [c.id, c.properties])).toEqual([["ctc_0", { plan: "pro" }], ["ctc_1", { plan: "pro" }]]);
  });

  it("plans best hours in calls of at most 5000 contacts, each due time from the window's start; none without a plan", async () => {
    const calls: { n: number; zones: string[]; start: number }[] = [];
    const transport = memoryTransport(({ service }) => {
      service(AudienceService, {
        planBestHours(req) {
          const start = Number(req.windowStart!.seconds) * 1000 + Math.floor(req.windowStart!.nanos / 1e6);
          calls.push({ n: req.contactIds.length, zones: [...new Set(req.timeZones)], start });
          // Even numbers: an hour on; odd: no plan.
          return { dueInMs: req.contactIds.map((id) => (Number(id.slice(4)) % 2 ? -1 : 3_600_000)), basis: [], events: [] };
        },
      });
    });
    const dir = new DirectoryClient(clientsOf(transport, true), 60_000);
    const start = new Date("2030-01-15T08:00:00.123Z");
    const many = Array.from({ length: 6_001 }, (_, i) => ({ id: `ctc_${i}`, timezone: i % 2 ? "Asia/Tokyo" : "" }));
    const plans = await dir.bestHours("ws", start, "Europe/Paris", many);
    expect(calls.map((c) => c.n)).toEqual([5_000, 1_001]);
    expect(calls[0]).toMatchObject({ zones: ["", "Asia/Tokyo"], start: start.getTime() });
    expect(plans).toHaveLength(6_001);
    expect(plans[0]).toBe(start.getTime() + 3_600_000);
    expect(plans[1]).toBeUndefined();
    expect(plans[6_000]).toBe(start.getTime() + 3_600_000);
  });

  it("an AudienceService without PlanBestHours plans nobody (everyone as SMART); other failures are thrown for a retry", async () => {
    const transport = memoryTransport(({ service }) => {
      service(AudienceService, {});
    });
    const dir = new DirectoryClient(clientsOf(transport, true), 60_000);
    expect(await dir.bestHours("ws", new Date(), "UTC", [{ id: "ctc_1", timezone: "" }])).toEqual([undefined]);
    const failing = memoryTransport(({ service }) => {
      service(AudienceService, {
        planBestHours() {
          throw new Error("store away");
        },
      });
    });
    const dir2 = new DirectoryClient(clientsOf(failing, true), 60_000);
    await expect(dir2.bestHours("ws", new Date(), "UTC", [{ id: "ctc_1", timezone: "" }])).rejects.toThrow();
  });
});
