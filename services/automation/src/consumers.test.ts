import { create } from "@bufbuild/protobuf";
import { beforeEach, describe, expect, it } from "vitest";
import { MailEventSchema, MailEventType } from "@mailroom/proto/events/v1/events_pb.js";
import { handleDirectoryEvent, handleMailEvent } from "./consumers.js";
import { buildEngineWorld, TEST_WS, type EngineWorld } from "./testing.js";

let w: EngineWorld;
beforeEach(async () => {
  w = await buildEngineWorld();
});

const WAITING = [{ id: "hello", type: "send", template: "welcome" }, { id: "pause", type: "wait", duration: "P1D" }, { id: "later", type: "send", template: "day-2" }];

async function enrolled(email: string) {
  const a = await w.automations.create(TEST_WS, { name: "Series", trigger: { type: "contact_created" }, steps: WAITING });
  await w.automations.activate(TEST_WS, a.id);
  const c = w.contacts.add({ email });
  await handleDirectoryEvent(w.enrolment, { id: `dev_${email}`, type: "CONTACT_CREATED", workspaceId: TEST_WS, data: { contact: { id: c.id, properties: { email, status: "SUBSCRIBED" } } } });
  await w.runner.tick();
  return { a, c };
}

const bounce = (recipient: string, permanent: boolean, contactId = "") =>
  create(MailEventSchema, { eventId: `evt_${recipient}_${permanent}`, type: MailEventType.BOUNCED, workspaceId: TEST_WS, recipient, contactId, permanent });

describe("mail events", () => {
  it("a hard bounce of any email to the address ends the contact's runs (suppressed); a soft one does not", async () => {
    const { a } = await enrolled("ann@example.test");
    await handleMailEvent(w.enrolment, bounce("ann@example.test", false));
    expect((await w.control.list({ workspaceId: TEST_WS, automationId: a.id, limit: 10 })).runs[0]).toMatchObject({ status: "ACTIVE" });
    // A transactional email's bounce names no contact: found by its address.
    await handleMailEvent(w.enrolment, bounce("ann@example.test", true));
    expect((await w.control.list({ workspaceId: TEST_WS, automationId: a.id, limit: 10 })).runs[0]).toMatchObject({ status: "EXITED", exitReason: "suppressed" });
    w.clock.advance(86_400_000);
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome"]);
  });
});

describe("replies (DESIGN §10.4)", () => {
  it("a REPLIED event of the email a run sent takes its wait_for_event email_replied into then; an open does not, and a reply enrols nobody", async () => {
    const a = await w.automations.create(TEST_WS, {
      name: "Follow-up",
      trigger: { type: "contact_created" },
      steps: [
        { id: "ask", type: "send", template: "welcome" },
        { id: "w", type: "wait_for_event", event: "email_replied", timeout: "P3D", then: [{ id: "thanks", type: "send", template: "upgrade" }], else: [{ id: "nudge", type: "send", template: "day-2" }] },
      ],
    });
    await w.automations.activate(TEST_WS, a.id);
    const c = w.contacts.add({ email: "ann@example.test" });
    await handleDirectoryEvent(w.enrolment, { id: "dev_ann", type: "CONTACT_CREATED", workspaceId: TEST_WS, data: { contact: { id: c.id, properties: { email: "ann@example.test", status: "SUBSCRIBED" } } } });
    await w.runner.tick();
    const emailId = w.mailer.sent[0]!.emailId;
    const mail = (type: MailEventType, id: string, workspaceId = TEST_WS) =>
      create(MailEventSchema, { eventId: id, type, workspaceId, emailId, recipient: "ann@example.test", contactId: c.id, detail: "rcv_1" });
    await handleMailEvent(w.enrolment, mail(MailEventType.OPENED, "evt_open"));
    // Another workspace's event naming the same email id is not this run's.
    await handleMailEvent(w.enrolment, mail(MailEventType.REPLIED, "evt_other", "ws_other"));
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome"]);
    await handleMailEvent(w.enrolment, mail(MailEventType.REPLIED, "evt_reply"));
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome", "upgrade"]);
    expect((await w.control.list({ workspaceId: TEST_WS, automationId: a.id, limit: 10 })).runs).toHaveLength(1);
  });
});
