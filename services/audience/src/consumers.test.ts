import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { pino } from "pino";
import { startNats, type NatsHandle } from "../../../test/harness/nats.js";
import { connectNats, type ConsumeLoop } from "@mailroom/kit/jetstream.js";
import { ensureMailStreams } from "@mailroom/pipeline/streams.js";
import { EVENTS_STREAM, EVENTS_SUBJECTS, eventSubject } from "@mailroom/pipeline/subjects.js";
import { DeliverySource, MailEventSchema, MailEventType, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { consumeMailOutcomes, mailOutcomeOf, OUTCOME_KINDS, OUTCOMES_DURABLE, outcomesDurable } from "./consumers.js";
import { memoryDirectory, type TestDirectory } from "./testing.js";
import type { DirectoryEvent } from "@mailroom/records/change-events.js";

const event = (init: Omit<Partial<MailEvent>, "$typeName" | "$unknown">) =>
  create(MailEventSchema, { workspaceId: "ws_a", source: DeliverySource.BROADCAST, recipient: "ann@example.test", ...init });

describe("mail outcomes → suppressions and contact status", () => {
  it("maps hard bounces, complaints and unsubscribes; ignores soft bounces and everything else", () => {
    expect(mailOutcomeOf(event({ type: MailEventType.BOUNCED, permanent: true, detail: "5.1.1" }))).toMatchObject({ kind: "hard_bounce", detail: "5.1.1" });
    expect(mailOutcomeOf(event({ type: MailEventType.BOUNCED, smtpCode: 550 }))).toMatchObject({ kind: "hard_bounce" });
    expect(mailOutcomeOf(event({ type: MailEventType.BOUNCED, permanent: false, smtpCode: 452 }))).toBeUndefined();
    expect(mailOutcomeOf(event({ type: MailEventType.COMPLAINED }))).toMatchObject({ kind: "complaint" });
    expect(mailOutcomeOf(event({ type: MailEventType.UNSUBSCRIBED }))).toMatchObject({ kind: "unsubscribed" });
    for (const type of [MailEventType.SENT, MailEventType.OPENED, MailEventType.CLICKED, MailEventType.DEFERRED, MailEventType.FAILED]) {
      expect(mailOutcomeOf(event({ type }))).toBeUndefined();
    }
  });

  describe("through a durable consumer on a real nats-server", () => {
    let nats: NatsHandle;
    let nc: NatsConnection;
    let dir: TestDirectory;
    let loop: ConsumeLoop;
    /** The directory's webhook-facing events (DIRECTORY_EVENTS), as its writes announced them. */
    const changes: DirectoryEvent[] = [];
    beforeAll(async () => {
      nats = await startNats();
      nc = await connectNats(nats.url, "directory-outcomes-test");
      await ensureMailStreams(nc, 1);
      dir = await memoryDirectory({ publishChanges: (events) => void changes.push(...events) });
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      loop = await consumeMailOutcomes(nc, dir.outcomes, pino({ level: "silent" }));
    }, 30_000);
    afterAll(async () => {
      await loop?.stop();
      await nc?.drain();
      await nats?.stop();
    });

    const publish = async (e: MailEvent, kind: string, msgID: string) =>
      jetstream(nc).publish(eventSubject("broadcast", kind), toBinary(MailEventSchema, e), { msgID });
    const waitFor = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await check()).toBe(true);
    };
    const reasonOf = async (email: string) => (await dir.suppressions.check("ws_a", [email]))[0]?.reason;
    const statusOf = async (email: string) => (await dir.contacts.get("ws_a", email)).status;

    it("suppresses and updates contacts, idempotently, whoever added the suppression first", async () => {
      for (const email of ["hard@example.test", "soft@example.test", "complainer@example.test", "leaver@example.test"]) {
        await dir.contacts.create("ws_a", { email });
      }
      // The inbound unit already added this one: the event must not fail or duplicate it.
      await dir.suppressions.add("ws_a", "complainer@example.test", "complaint", "arf abuse");

      await publish(event({ type: MailEventType.BOUNCED, recipient: "Hard@Example.test", permanent: true, detail: "550 5.1.1 no such user" }), "bounced", "e1");
      await publish(event({ type: MailEventType.BOUNCED, recipient: "soft@example.test", permanent: false, smtpCode: 452 }), "bounced", "e2");
      await publish(event({ type: MailEventType.COMPLAINED, recipient: "complainer@example.test" }), "complained", "e3");
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "leaver@example.test" }), "unsubscribed", "e4");
      await publish(event({ type: MailEventType.SENT, recipient: "soft@example.test" }), "sent", "e5");
      // A redelivery (same event again under another msgID, as after an ack timeout).
      await publish(event({ type: MailEventType.COMPLAINED, recipient: "complainer@example.test" }), "complained", "e6");
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "leaver@example.test" }), "unsubscribed", "e7");

      await waitFor(async () => (await reasonOf("leaver@example.test")) === "unsubscribed" && (await reasonOf("hard@example.test")) === "hard_bounce");
      await waitFor(async () => (await statusOf("complainer@example.test")) === "UNSUBSCRIBED");
      expect(await reasonOf("complainer@example.test")).toBe("complaint");
      expect(await statusOf("leaver@example.test")).toBe("UNSUBSCRIBED");
      // Hard bounce: suppressed, consent (status) untouched.
      expect(await statusOf("hard@example.test")).toBe("SUBSCRIBED");
      // Soft bounce and SENT change nothing.
      expect(await reasonOf("soft@example.test")).toBeUndefined();
      expect(await statusOf("soft@example.test")).toBe("SUBSCRIBED");
      expect((await dir.suppressions.list("ws_a")).items.map((s) => s.emailLower).sort()).toEqual([
        "complainer@example.test", "hard@example.test", "leaver@example.test",
      ]);
    }, 30_000);

    const contactEvents = (id: string) => changes.filter((e) => (e.data.contact as { id?: string } | undefined)?.id === id);

    it("a complaint that unsubscribes a contact announces CONTACT_UPDATED (status) and CONTACT_UNSUBSCRIBED with reason complaint, once; a hard bounce changes no contact and announces nothing", async () => {
      const complainer = await dir.contacts.create("ws_a", { email: "arf@example.test" });
      const bouncer = await dir.contacts.create("ws_a", { email: "gone@example.test" });
      await publish(event({ type: MailEventType.COMPLAINED, recipient: "arf@example.test", detail: "arf abuse" }), "complained", "c1");
      await publish(event({ type: MailEventType.COMPLAINED, recipient: "arf@example.test", detail: "arf abuse" }), "complained", "c2"); // redelivered
      await publish(event({ type: MailEventType.BOUNCED, recipient: "gone@example.test", permanent: true, detail: "550 5.1.1" }), "bounced", "b1");
      await waitFor(async () => (await reasonOf("gone@example.test")) === "hard_bounce" && (await statusOf("arf@example.test")) === "UNSUBSCRIBED");
      await new Promise((r) => setTimeout(r, 300));

      const mine = contactEvents(complainer._id).filter((e) => e.type !== "CONTACT_CREATED");
      expect(mine.map((e) => e.type)).toEqual(["CONTACT_UPDATED", "CONTACT_UNSUBSCRIBED"]);
      expect(mine[0].data).toMatchObject({ changes: ["status"], contact: { id: complainer._id, properties: { status: "UNSUBSCRIBED" } } });
      expect(mine[1].data).toMatchObject({ reason: "complaint", contact: { id: complainer._id, properties: { email: "arf@example.test", status: "UNSUBSCRIBED" } } });
      // The hard bounce suppresses the address; consent is untouched, so no CONTACT_* event.
      expect(await statusOf("gone@example.test")).toBe("SUBSCRIBED");
      expect(contactEvents(bouncer._id).map((e) => e.type)).toEqual(["CONTACT_CREATED"]);
    }, 30_000);

    it("a one-click unsubscribe that arrives after the contact resubscribed is not applied; one newer than the last status change is", async () => {
      const c = await dir.contacts.create("ws_a", { email: "late@example.test" });
      const clickedAt = new Date(Date.now() - 60_000);
      // The click's own synchronous unsubscribe (the gateway's), then the recipient resubscribes.
      await dir.suppressions.add("ws_a", "late@example.test", "unsubscribed", "unsubscribed from cmp_1");
      expect(await statusOf("late@example.test")).toBe("UNSUBSCRIBED");
      await dir.suppressions.remove("ws_a", "late@example.test");
      await dir.contacts.update("ws_a", { email: "late@example.test", status: "SUBSCRIBED" });
      expect(await statusOf("late@example.test")).toBe("SUBSCRIBED");
      const before = contactEvents(c._id).length;

      // The click's MailEvent, consumed late (a slow or redelivering consumer).
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "late@example.test", occurredAt: timestampFromDate(clickedAt) }), "unsubscribed", "late-1");
      // A marker behind it on the same durable: once it is applied, the late one was handled.
      await dir.contacts.create("ws_a", { email: "marker@example.test" });
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "marker@example.test", occurredAt: timestampFromDate(new Date()) }), "unsubscribed", "late-2");
      await waitFor(async () => (await statusOf("marker@example.test")) === "UNSUBSCRIBED");
      expect(await statusOf("late@example.test")).toBe("SUBSCRIBED");
      expect(await reasonOf("late@example.test")).toBeUndefined();
      expect(contactEvents(c._id)).toHaveLength(before);

      // A newer unsubscribe (after the resubscribe) is applied.
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "late@example.test", occurredAt: timestampFromDate(new Date(Date.now() + 1_000)) }), "unsubscribed", "late-3");
      await waitFor(async () => (await statusOf("late@example.test")) === "UNSUBSCRIBED");
      expect(await reasonOf("late@example.test")).toBe("unsubscribed");
      expect(contactEvents(c._id).slice(before).map((e) => [e.type, e.data.reason])).toEqual([["CONTACT_UPDATED", undefined], ["CONTACT_UNSUBSCRIBED", "unsubscribed"]]);
    }, 30_000);
  });

  it("takes over from the single durable of earlier releases where it stopped: nothing replayed, nothing skipped", async () => {
    const nats = await startNats();
    const nc = await connectNats(nats.url, "directory-outcomes-upgrade-test");
    try {
      await ensureMailStreams(nc, 1);
      const dir = await memoryDirectory();
      await dir.workspaces.create({ id: "ws_a", name: "A" });
      for (const email of ["before@example.test", "after@example.test"]) await dir.contacts.create("ws_a", { email });
      const jsm = await jetstreamManager(nc);
      await jsm.consumers.add(EVENTS_STREAM, { durable_name: OUTCOMES_DURABLE, ack_policy: AckPolicy.Explicit, filter_subject: EVENTS_SUBJECTS });
      const js = jetstream(nc);
      const publish = (e: MailEvent, kind: string, msgID: string) => js.publish(eventSubject("broadcast", kind), toBinary(MailEventSchema, e), { msgID });
      // Handled by the old release (acked), then the contact resubscribed: must not be unsubscribed again.
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "before@example.test" }), "unsubscribed", "u1");
      const old = await js.consumers.get(EVENTS_STREAM, OUTCOMES_DURABLE);
      const handled = await old.next();
      handled!.ack();
      await handled!.ackAck();
      // Published while the upgrade was under way: must still count.
      await publish(event({ type: MailEventType.UNSUBSCRIBED, recipient: "after@example.test" }), "unsubscribed", "u2");

      const loop = await consumeMailOutcomes(nc, dir.outcomes, pino({ level: "silent" }));
      try {
        for (let i = 0; i < 100 && (await dir.contacts.get("ws_a", "after@example.test")).status !== "UNSUBSCRIBED"; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await dir.contacts.get("ws_a", "after@example.test")).status).toBe("UNSUBSCRIBED");
        expect((await dir.contacts.get("ws_a", "before@example.test")).status).toBe("SUBSCRIBED");
        const names = [];
        for await (const c of jsm.consumers.list(EVENTS_STREAM)) names.push(c.name);
        expect(names.sort()).toEqual(OUTCOME_KINDS.map(outcomesDurable).sort());
      } finally {
        await loop.stop();
      }
    } finally {
      await nc.drain();
      await nats.stop();
    }
  }, 30_000);
});
