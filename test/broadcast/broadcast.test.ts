import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import { jetstream } from "@nats-io/jetstream";
import {
  BroadcastService,
  BroadcastStatus,
  DeliveryMethod,
  type Broadcast,
} from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { DeliverySource, MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { connectNats, publishProto } from "@mailroom/kit/jetstream.js";
import { startSystem, type TestSystem } from "../harness/system.js";

/**
 * The broadcast unit as a real process, driven over its Connect API, with the real
 * accounts, audience, renderer and delivery processes, nats-server and an SMTP sink.
 */

const WS = "ws_bc";
const contact = (email: string, firstName: string, extra: Record<string, unknown> = {}) => ({ email, firstName, subscribed: true, properties: { plan: "pro" }, ...extra });

const bootstrap = {
  workspaces: [
    {
      id: WS, name: "Broadcasts", timezone: "Europe/Paris",
      apiKeys: [{ key: "mr_test_bc_1", scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["acme.test"],
      members: ["owner@acme.test", "dev@acme.test"],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 100_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }],
      contacts: [
        contact("ann@example.test", "Ann"),
        contact("bob@example.test", "Bob"),
        contact("cid@example.test", "Cid"),
        contact("dee@example.test", "Dee"),
        contact("eve@example.test", "Eve"),
        contact("fay@example.test", "Fay"),
        contact("gus@example.test", "Gus", { subscribed: false }),
        contact("owner@acme.test", "Olga", { properties: { plan: "team" } }),
      ],
    },
    {
      id: "ws_gated", name: "Gated", timezone: "UTC",
      verifiedDomains: ["gated.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: true, verified: true },
      monthlyLimit: 1000, sendingAccountNew: false,
    },
    {
      id: "ws_else", name: "Else", timezone: "UTC",
      verifiedDomains: ["else.test"], members: [],
      flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
      monthlyLimit: 1000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("broadcast unit (real processes)", () => {
  let sys: TestSystem;
  let broadcasts: ReturnType<typeof connectClient<typeof BroadcastService>>;
  let accounts: ReturnType<typeof connectClient<typeof AccountsService>>;
  let contacts: ReturnType<typeof connectClient<typeof ContactService>>;
  let seq = 0;

  const draft = (over: Record<string, unknown> = {}) => ({
    workspaceId: WS,
    name: `b${++seq}`,
    subject: `Hello {{firstName}} #${seq}`,
    fromEmail: "news@acme.test",
    fromName: "Acme News",
    html: `<html><body><p>Hi {{firstName}}, plan {{plan}}.</p><p><a href="https://acme.test/spring">Spring</a></p></body></html>`,
    audience: { all: true },
    ...over,
  });

  const code = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;
  const messagesWith = (marker: string) => sys.sink!.messages.filter((m) => m.raw.includes(marker));

  async function statusBecomes(id: string, status: BroadcastStatus, timeoutMs = 20_000): Promise<Broadcast> {
    const deadline = Date.now() + timeoutMs;
    let last: Broadcast | undefined;
    while (Date.now() < deadline) {
      last = (await broadcasts.getBroadcast({ workspaceId: WS, id })).broadcast!;
      if (last.status === status) return last;
      await sleep(100);
    }
    throw new Error(`broadcast ${id} did not become ${BroadcastStatus[status]}: ${BroadcastStatus[last!.status]} ${JSON.stringify(last?.progress, (_k, v) => (typeof v === "bigint" ? Number(v) : v))}\n${await sys.log("broadcast")}\n${await sys.log("delivery")}`);
  }

  beforeAll(async () => {
    sys = await startSystem({ bootstrap, units: ["accounts", "audience", "renderer", "delivery", "broadcast"] });
    broadcasts = connectClient(BroadcastService, `http://127.0.0.1:${sys.ports.broadcast}`);
    accounts = connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("sends exactly one message per subscribed contact, skipping suppressed and newly unsubscribed ones, then COMPLETES", async () => {
    await contacts.addSuppression({ workspaceId: WS, email: "cid@example.test", reason: SuppressionReason.HARD_BOUNCE, detail: "550" });
    const { broadcast } = await broadcasts.createBroadcast(draft({ subject: "Spring {{firstName}} #main" }));
    const usageBefore = await accounts.getUsage({ workspaceId: WS });
    const scheduled = await broadcasts.scheduleBroadcast({
      workspaceId: WS, id: broadcast!.id, deliveryMethod: DeliveryMethod.ASAP, sendAt: timestampFromDate(new Date(Date.now() + 2_500)),
    });
    expect(scheduled.broadcast!.status).toBe(BroadcastStatus.SCHEDULED);
    // Unsubscribes between schedule and start are honoured.
    await contacts.updateContact({ workspaceId: WS, contact: { email: "dee@example.test", subscribed: false } });

    const done = await statusBecomes(broadcast!.id, BroadcastStatus.COMPLETED);
    const mails = messagesWith("#main");
    const recipients = mails.flatMap((m) => m.to).sort();
    expect(recipients).toEqual(["ann@example.test", "bob@example.test", "eve@example.test", "fay@example.test", "owner@acme.test"]);
    expect(done.sentAt).toBeDefined();
    expect(done.progress).toMatchObject({ recipients: 5n, released: 5n, sent: 5n, delivered: 5n, failed: 0n, bounced: 0n });
    expect((await accounts.getUsage({ workspaceId: WS })).used - usageBefore.used).toBe(5n);

    const ann = await PostalMime.parse(mails.find((m) => m.to.includes("ann@example.test"))!.raw);
    expect(ann.subject).toBe("Spring Ann #main");
    expect(ann.html).toContain("Hi Ann, plan pro.");
    expect(ann.html).toContain(`${sys.publicUrl}/t/c/`); // click tracking
    expect(ann.html).toContain(`${sys.publicUrl}/u/`); // unsubscribe footer
    expect(ann.headers.find((h) => h.key === "list-unsubscribe-post")?.value).toBe("List-Unsubscribe=One-Click");
    const olga = await PostalMime.parse(mails.find((m) => m.to.includes("owner@acme.test"))!.raw);
    expect(olga.html).toContain("Hi Olga, plan team.");
  });

  it("answers SCHEDULED without sendAt and is IN_PROGRESS within a second", async () => {
    const { broadcast } = await broadcasts.createBroadcast(draft());
    const res = await broadcasts.scheduleBroadcast({ workspaceId: WS, id: broadcast!.id, deliveryMethod: DeliveryMethod.ASAP });
    expect(res.broadcast!.status).toBe(BroadcastStatus.SCHEDULED);
    await sleep(1_000);
    const now = (await broadcasts.getBroadcast({ workspaceId: WS, id: broadcast!.id })).broadcast!;
    expect([BroadcastStatus.IN_PROGRESS, BroadcastStatus.COMPLETED]).toContain(now.status);
    await statusBecomes(broadcast!.id, BroadcastStatus.COMPLETED);
  });

  it("sends tests to members only, with [TEST] and the member's merge values, uncounted, status unchanged", async () => {
    const { broadcast } = await broadcasts.createBroadcast(draft({ subject: "News for {{firstName}} #test" }));
    const id = broadcast!.id;
    expect(await code(broadcasts.sendTest({ workspaceId: WS, id, emails: ["owner@acme.test", "ann@example.test"] }))).toBe("test_recipients_not_members");
    expect(await code(broadcasts.sendTest({ workspaceId: WS, id, emails: [] }))).toBe("invalid_test_recipients");
    expect(await code(broadcasts.sendTest({ workspaceId: WS, id, emails: Array.from({ length: 11 }, () => "owner@acme.test") }))).toBe("invalid_test_recipients");
    const usage = await accounts.getUsage({ workspaceId: WS });
    const res = await broadcasts.sendTest({ workspaceId: WS, id, emails: ["owner@acme.test", "dev@acme.test"] });
    expect(res.broadcast!.status).toBe(BroadcastStatus.DRAFT);
    const mails = await (async () => {
      for (let i = 0; i < 100 && messagesWith("#test").length < 2; i++) await sleep(100);
      return messagesWith("#test");
    })();
    expect(mails.flatMap((m) => m.to).sort()).toEqual(["dev@acme.test", "owner@acme.test"]);
    const olga = await PostalMime.parse(mails.find((m) => m.to.includes("owner@acme.test"))!.raw);
    expect(olga.subject).toBe("[TEST] News for Olga #test");
    expect(olga.html).toContain("Hi Olga, plan team.");
    expect(olga.html).toContain(`${sys.publicUrl}/u/`);
    const dev = await PostalMime.parse(mails.find((m) => m.to.includes("dev@acme.test"))!.raw);
    expect(dev.subject).toBe("[TEST] News for  #test");
    expect((await accounts.getUsage({ workspaceId: WS })).used).toBe(usage.used);
    expect((await broadcasts.getBroadcast({ workspaceId: WS, id })).broadcast!.status).toBe(BroadcastStatus.DRAFT);
  });

  it("lets one of a concurrent schedule and cancel win; after a 200 cancel nothing goes out", async () => {
    const round = async (i: number, cancelDelayMs: number, sendInMs?: number) => {
      const marker = `#race${i}-${Date.now()}`;
      const { broadcast } = await broadcasts.createBroadcast(draft({ subject: `Race {{firstName}} ${marker}` }));
      const id = broadcast!.id;
      const sendAt = sendInMs === undefined ? undefined : timestampFromDate(new Date(Date.now() + sendInMs));
      const schedule = broadcasts.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.ASAP, sendAt });
      await sleep(cancelDelayMs);
      const [s, c] = await Promise.allSettled([schedule, broadcasts.cancelBroadcast({ workspaceId: WS, id })]);
      return { id, marker, scheduled: s.status === "fulfilled", cancelled: c.status === "fulfilled", cancelCode: c.status === "rejected" ? errorInfoOf(c.reason)?.code : undefined };
    };
    /** A round whose order is certain: the cancel goes only once the schedule has answered (and, with `started`, once sending began). */
    const ordered = async (i: number, sendInMs: number | undefined, started: boolean) => {
      const marker = `#order${i}-${Date.now()}`;
      const { broadcast } = await broadcasts.createBroadcast(draft({ subject: `Order {{firstName}} ${marker}` }));
      const id = broadcast!.id;
      const sendAt = sendInMs === undefined ? undefined : timestampFromDate(new Date(Date.now() + sendInMs));
      await broadcasts.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.ASAP, sendAt });
      if (started) await statusBecomes(id, BroadcastStatus.COMPLETED);
      const c = await broadcasts.cancelBroadcast({ workspaceId: WS, id }).then(() => undefined, (err: unknown) => err);
      return { id, marker, scheduled: true, cancelled: c === undefined, cancelCode: c === undefined ? undefined : errorInfoOf(c)?.code };
    };
    const rounds = await Promise.all([
      // Schedule and cancel sent together: whichever lands first decides.
      ...[0, 0, 5, 20].map((delay, i) => round(i, delay)),
      // Cancels around the start of a broadcast due in 600 ms: before it wins, after it loses
      // (on a loaded machine the schedule itself may take longer, so any outcome may happen here).
      ...[100, 300, 500, 700, 900, 1_200].map((delay, i) => round(10 + i, delay, 600)),
      // Both outcomes for certain, whatever the machine's speed: a cancel before the start wins,
      // a cancel after it is refused.
      ordered(20, 60_000, false),
      ordered(21, undefined, true),
    ]);
    await sleep(3_000);
    for (const r of rounds) {
      const b = (await broadcasts.getBroadcast({ workspaceId: WS, id: r.id })).broadcast!;
      if (r.cancelled) {
        expect(b.status).toBe(BroadcastStatus.DRAFT);
        expect(b.scheduledAt).toBeUndefined();
        expect(messagesWith(r.marker)).toHaveLength(0);
      } else {
        expect(r.cancelCode).toBe("broadcast_not_cancellable");
        // The winning schedule goes on to send (on a loaded machine it may take a moment to start).
        if (r.scheduled) await statusBecomes(r.id, BroadcastStatus.COMPLETED);
      }
    }
    expect(rounds.some((r) => r.cancelled)).toBe(true);
    expect(rounds.some((r) => r.scheduled && !r.cancelled)).toBe(true);
  });

  it("keeps a scheduled broadcast across a restart of the broadcast process", async () => {
    const { broadcast } = await broadcasts.createBroadcast(draft({ subject: "Later {{firstName}} #restart" }));
    const id = broadcast!.id;
    await broadcasts.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.SMART, sendAt: timestampFromDate(new Date(Date.now() + 1_500)) });
    await sys.processes.restart("broadcast");
    const done = await statusBecomes(id, BroadcastStatus.COMPLETED);
    expect(done.deliveryMethod).toBe(DeliveryMethod.SMART);
    const recipients = messagesWith("#restart").flatMap((m) => m.to).sort();
    expect(recipients).toEqual(["ann@example.test", "bob@example.test", "eve@example.test", "fay@example.test", "owner@acme.test"]);
  });

  it("counts redelivered and repeated events once", async () => {
    const { broadcast } = await broadcasts.createBroadcast(draft({ subject: "Count {{firstName}} #count" }));
    const id = broadcast!.id;
    await broadcasts.scheduleBroadcast({ workspaceId: WS, id, deliveryMethod: DeliveryMethod.ASAP });
    const done = await statusBecomes(id, BroadcastStatus.COMPLETED);
    const nc = await connectNats(sys.nats.url, "broadcast-test");
    try {
      const js = jetstream(nc);
      const ann = await PostalMime.parse(messagesWith("#count").find((m) => m.to.includes("ann@example.test"))!.raw);
      const messageId = (ann.messageId ?? "").replace(/^<|>$/g, "");
      const contactId = messageId.split(".")[0];
      const publish = (type: MailEventType, eventId: string, deliveryId = "") =>
        publishProto(js, `mail.events.broadcast.${MailEventType[type].toLowerCase()}`, MailEventSchema, create(MailEventSchema, {
          eventId, type, workspaceId: WS, source: DeliverySource.BROADCAST, broadcastId: id, deliveryId, contactId, messageId, recipient: "ann@example.test", occurredAt: timestampNow(),
        }), eventId);
      // A second "sent" for the same delivery (new event id: not deduplicated by NATS).
      await publish(MailEventType.SENT, `again-${id}`, `${id}.${contactId}`);
      for (let i = 0; i < 3; i++) await publish(MailEventType.OPENED, `open-${id}-${i}`);
      await publish(MailEventType.CLICKED, `click-${id}`);
      const deadline = Date.now() + 10_000;
      let progress = done.progress!;
      while (Date.now() < deadline && (progress.opened < 1n || progress.clicked < 1n)) {
        await sleep(100);
        progress = (await broadcasts.getBroadcast({ workspaceId: WS, id })).broadcast!.progress!;
      }
      await sleep(500);
      progress = (await broadcasts.getBroadcast({ workspaceId: WS, id })).broadcast!.progress!;
      expect(progress).toMatchObject({ sent: done.progress!.sent, opened: 1n, clicked: 1n });
    } finally {
      await nc.close();
    }
  });

  it("gates, hides other workspaces' broadcasts and refuses what the rules refuse", async () => {
    expect(await code(broadcasts.createBroadcast(draft({ workspaceId: "ws_gated", fromEmail: "a@gated.test" })))).toBe("broadcast_api_not_enabled");
    expect(await code(broadcasts.listBroadcasts({ workspaceId: "ws_gated" }))).toBe("broadcast_api_not_enabled");
    const { broadcast } = await broadcasts.createBroadcast(draft());
    const id = broadcast!.id;
    expect(await code(broadcasts.getBroadcast({ workspaceId: "ws_else", id }))).toBe("broadcast_not_found");
    expect(await code(broadcasts.cancelBroadcast({ workspaceId: WS, id }))).toBe("broadcast_not_cancellable");
    expect(await code(broadcasts.createBroadcast(draft({ fromEmail: "x@evil.test" })))).toBe("campaigns/invalid_from_email");
    expect(await code(broadcasts.createBroadcast(draft({ html: "<p>{{coupon}}</p>" })))).toBe("broadcast_unknown_variables");
    expect(await code(broadcasts.scheduleBroadcast({ workspaceId: WS, id, sendAt: timestampFromDate(new Date(Date.now() + 91 * 86_400_000)) }))).toBe("send_at_out_of_range");
    const listed = await broadcasts.listBroadcasts({ workspaceId: WS, page: { limit: 2 } });
    expect(listed.broadcasts).toHaveLength(2);
    expect(listed.page?.hasMore).toBe(true);
    const next = await broadcasts.listBroadcasts({ workspaceId: WS, page: { limit: 100, cursor: listed.page!.nextCursor } });
    const ids = [...listed.broadcasts, ...next.broadcasts].map((b) => b.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids[0]).toBe(id);
  });
});
