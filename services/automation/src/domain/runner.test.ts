import { beforeEach, describe, expect, it } from "vitest";
import { buildEngineWorld, TEST_WS, type EngineWorld } from "../testing.js";
import type { RunContact } from "./runner.js";
import { sendKey } from "./runner.js";

let w: EngineWorld;
let seq = 0;

beforeEach(async () => {
  w = await buildEngineWorld();
});

async function automation(def: { trigger?: unknown; steps: unknown; reentry?: unknown }, activate = true) {
  const a = await w.automations.create(TEST_WS, { name: "Series", trigger: def.trigger ?? { type: "contact_created" }, steps: def.steps, reentry: def.reentry });
  if (activate) await w.automations.activate(TEST_WS, a.id);
  return a;
}

/** A contact created (the audience unit's CONTACT_CREATED), enrolled. */
async function created(c: RunContact, eventId = `dev_${++seq}`) {
  return w.enrolment.trigger({ eventId, workspaceId: TEST_WS, type: "contact_created", contact: { id: c.id, email: c.email, status: c.status }, matches: () => true });
}

const runsOf = async (automationId: string) => (await w.control.list({ workspaceId: TEST_WS, automationId, limit: 100 })).runs;

/** Moves the clock on and lets the claim loop do whatever came due. */
async function after(ms: number) {
  w.clock.advance(ms);
  return w.runner.tick();
}

const WELCOME = [
  { id: "hello", type: "send", template: "welcome" },
  { id: "pause", type: "wait", duration: "PT2S" },
  { id: "plan", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "pro", type: "send", template: "upgrade" }], else: [{ id: "free", type: "send", template: "day-2" }] },
];

describe("runs through their steps", () => {
  it("a welcome series: send, wait 2 s, then the branch the contact's plan picks, in order, each once", async () => {
    const a = await automation({ steps: WELCOME });
    const ann = w.contacts.add({ email: "ann@example.test", properties: { plan: "pro" } });
    const bob = w.contacts.add({ email: "bob@example.test", properties: { plan: "free" } });
    expect(await created(ann)).toBe(1);
    expect(await created(bob)).toBe(1);
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome"]);
    await after(1_000);
    expect(w.mailer.sent).toHaveLength(2); // the wait has not ended
    await after(1_000);
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome", "upgrade"]);
    expect(w.mailer.to("bob@example.test")).toEqual(["welcome", "day-2"]);
    const runs = await runsOf(a.id);
    expect(runs.map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
    const annRun = runs.find((r) => r.contactId === ann.id)!;
    expect(annRun.steps.map((s) => [s.stepId, s.branch ?? "", Boolean(s.completedAt)])).toEqual([
      ["hello", "", true], ["pause", "", true], ["plan", "then", true], ["pro", "", true],
    ]);
    expect(annRun.steps[0]!.emailId).toMatch(/^trs_/);
    const first = w.mailer.sent.find((s) => s.to === "ann@example.test")!;
    expect(first.idempotencyKey).toBe(sendKey(annRun.id, "hello"));
    expect(first.variables).toMatchObject({ email: "ann@example.test", plan: "pro" });
    expect(w.events.ids().filter((id) => id.startsWith(annRun.id))).toEqual([`${annRun.id}.started`, `${annRun.id}.completed`]);
  });

  it("stats: entered, waiting, completed and exited per step of the version", async () => {
    const a = await automation({ steps: WELCOME });
    for (const name of ["a", "b", "c"]) await created(w.contacts.add({ email: `${name}@example.test`, properties: { plan: name === "a" ? "pro" : "free" } }));
    await w.runner.tick();
    let stats = await w.automations.stats(TEST_WS, a.id);
    // Each step once, depth first: the condition's branches are not listed again after it.
    expect(stats.steps.map((s) => s.stepId)).toEqual(["hello", "pause", "plan", "pro", "free"]);
    const row = (id: string) => stats.steps.find((s) => s.stepId === id)!;
    expect(row("hello")).toMatchObject({ entered: 3, completed: 3, waiting: 0 });
    expect(row("pause")).toMatchObject({ entered: 3, completed: 0, waiting: 3 });
    await after(2_000);
    stats = await w.automations.stats(TEST_WS, a.id);
    expect(row("pause")).toMatchObject({ entered: 3, completed: 3, waiting: 0 });
    expect([row("pro").completed, row("free").completed]).toEqual([1, 2]);
    expect(await w.control.counts(TEST_WS, a.id)).toEqual({ active: 0, completed: 3, exited: 0 });
  });

  it("wait_until: the next 09:00 in the contact's timezone, else the workspace's, else UTC", async () => {
    await automation({ steps: [{ id: "nine", type: "wait_until", time: "09:00" }, { id: "s", type: "send", template: "welcome" }] });
    // 2030-01-15T12:00Z: 09:00 in New York (UTC-5) is 14:00Z today; in UTC it is 09:00Z tomorrow.
    await created(w.contacts.add({ email: "ny@example.test", timezone: "America/New_York" }));
    w.contacts.workspaceTz = "Asia/Tokyo"; // 09:00 JST = 00:00Z tomorrow
    await created(w.contacts.add({ email: "tk@example.test" }));
    await w.runner.tick();
    const runs = (await w.control.list({ workspaceId: TEST_WS, contactId: "ctc_ny", limit: 5 })).runs;
    expect(runs[0]!.nextAt?.toISOString()).toBe("2030-01-15T14:00:00.000Z");
    const tk = (await w.control.list({ workspaceId: TEST_WS, contactId: "ctc_tk", limit: 5 })).runs;
    expect(tk[0]!.nextAt?.toISOString()).toBe("2030-01-16T00:00:00.000Z");
    await after(2 * 3600_000); // 14:00Z
    expect(w.mailer.sent.map((s) => s.to)).toEqual(["ny@example.test"]);
    await after(10 * 3600_000);
    expect(w.mailer.sent.map((s) => s.to)).toEqual(["ny@example.test", "tk@example.test"]);
  });

  it("update_contact, add_to_group and remove_from_group call the audience unit; exit ends the run as exited", async () => {
    const a = await automation({
      steps: [
        { id: "u", type: "update_contact", properties: { plan: "trial" } },
        { id: "g", type: "add_to_group", groupId: "grp_01" },
        { id: "r", type: "remove_from_group", groupId: "grp_01" },
        { id: "x", type: "exit" },
        { id: "never", type: "send", template: "welcome" },
      ],
    });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    expect(w.contacts.calls.filter((c) => !c.startsWith("contact:"))).toEqual([`update:${ann.id}:{"plan":"trial"}`, `add:grp_01:${ann.id}`, `remove:grp_01:${ann.id}`]);
    const [run] = await runsOf(a.id);
    expect(run).toMatchObject({ status: "EXITED", exitReason: "exit_step" });
    expect(w.mailer.sent).toHaveLength(0);
  });
});

describe("wait_for_event", () => {
  const STEPS = [
    { id: "w", type: "wait_for_event", event: "purchase", timeout: "PT1H", then: [{ id: "thanks", type: "send", template: "welcome" }], else: [{ id: "nudge", type: "send", template: "day-2" }] },
  ];

  it("the event within the timeout takes `then` at once", async () => {
    const a = await automation({ steps: STEPS });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    w.clock.advance(60_000);
    expect(await w.enrolment.customEvent(TEST_WS, ann.id, "purchase")).toBe(1);
    expect(await w.enrolment.customEvent(TEST_WS, ann.id, "purchase")).toBe(0); // already moved
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome"]);
    const [run] = await runsOf(a.id);
    expect(run!.steps[0]).toMatchObject({ stepId: "w", branch: "then" });
    await after(3600_000);
    expect(w.mailer.sent).toHaveLength(1);
  });

  it("an event that came after the run arrived at the step, before the claim loop entered it, counts; one from before does not", async () => {
    const a = await automation({ steps: [{ id: "first", type: "wait", duration: "PT10S" }, ...STEPS] });
    const ann = w.contacts.add({ email: "ann@example.test" });
    const bob = w.contacts.add({ email: "bob@example.test" });
    await created(ann);
    await created(bob);
    await w.runner.tick();
    // Both purchased during the first wait: before they reached the wait_for_event.
    w.clock.advance(5_000);
    expect(await w.enrolment.customEvent(TEST_WS, ann.id, "purchase")).toBe(0);
    expect(await w.enrolment.customEvent(TEST_WS, bob.id, "purchase")).toBe(0);
    // The wait ends at 10 s; Ann purchases again at 10.1 s, before a claim enters the step.
    w.clock.advance(5_100);
    expect(await w.enrolment.customEvent(TEST_WS, ann.id, "purchase")).toBe(0);
    await w.runner.tick();
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome"]);
    expect(w.mailer.to("bob@example.test")).toEqual([]);
    const runs = await runsOf(a.id);
    expect(runs.find((r) => r.contactId === ann.id)!.steps.find((s) => s.stepId === "w")).toMatchObject({ branch: "then" });
    expect(runs.find((r) => r.contactId === bob.id)).toMatchObject({ status: "ACTIVE", currentStepId: "w" });
  });

  it("no event: `else` after the timeout; an event of another name changes nothing", async () => {
    await automation({ steps: STEPS });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    expect(await w.enrolment.customEvent(TEST_WS, ann.id, "signup")).toBe(0);
    await after(3599_000);
    expect(w.mailer.sent).toHaveLength(0);
    await after(1_000);
    expect(w.mailer.to("ann@example.test")).toEqual(["day-2"]);
  });

  it("email_opened of an email the run sent", async () => {
    await automation({
      steps: [
        { id: "s", type: "send", template: "welcome" },
        { id: "w", type: "wait_for_event", event: "email_opened", timeout: "P1D", then: [{ id: "t", type: "send", template: "upgrade" }] },
      ],
    });
    await created(w.contacts.add({ email: "ann@example.test" }));
    await w.runner.tick();
    const emailId = w.mailer.sent[0]!.emailId;
    expect(await w.enrolment.emailEvent(TEST_WS, emailId, "email_clicked")).toBe(0);
    expect(await w.enrolment.emailEvent(TEST_WS, emailId, "email_opened")).toBe(1);
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome", "upgrade"]);
  });
});

describe("pause, versions, exits", () => {
  it("a paused automation's runs hold where they are and go on at activate", async () => {
    const a = await automation({ steps: WELCOME });
    await created(w.contacts.add({ email: "ann@example.test", properties: { plan: "pro" } }));
    await w.runner.tick();
    await w.automations.pause(TEST_WS, a.id);
    await after(10_000);
    expect(w.mailer.sent).toHaveLength(1);
    expect(await created(w.contacts.add({ email: "late@example.test" }))).toBe(0); // nobody enters while paused
    await w.automations.activate(TEST_WS, a.id);
    await w.runner.tick();
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome", "upgrade"]);
  });

  it("a new version while runs wait: they finish on theirs, new contacts take the new one", async () => {
    const a = await automation({ steps: WELCOME });
    await created(w.contacts.add({ email: "ann@example.test", properties: { plan: "free" } }));
    await w.runner.tick();
    await w.automations.update(TEST_WS, a.id, { steps: [{ id: "only", type: "send", template: "upgrade" }] });
    await created(w.contacts.add({ email: "bob@example.test" }));
    await after(2_000);
    expect(w.mailer.to("ann@example.test")).toEqual(["welcome", "day-2"]);
    expect(w.mailer.to("bob@example.test")).toEqual(["upgrade"]);
    const runs = await runsOf(a.id);
    expect(runs.map((r) => [r.contactId, r.version]).sort()).toEqual([["ctc_ann", 1], ["ctc_bob", 2]]);
  });

  it("an unsubscribe ends the contact's runs at once; a later claim sends nothing", async () => {
    const a = await automation({ steps: WELCOME });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    expect(await w.enrolment.exitContact(TEST_WS, ann.id, "unsubscribed")).toBe(1);
    await after(5_000);
    expect(w.mailer.sent).toHaveLength(1);
    const [run] = await runsOf(a.id);
    expect(run).toMatchObject({ status: "EXITED", exitReason: "unsubscribed" });
    expect(w.events.ids()).toContain(`${run!.id}.exited`);
    const stats = await w.automations.stats(TEST_WS, a.id);
    expect(stats.steps.find((s) => s.stepId === "pause")).toMatchObject({ entered: 1, exited: 1, waiting: 0 });
  });

  it("a deleted contact's runs exit (deleted) and keep no address (it may have been erased)", async () => {
    const a = await automation({ steps: WELCOME });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    expect(await w.enrolment.exitContact(TEST_WS, ann.id, "deleted")).toBe(1);
    const [run] = await runsOf(a.id);
    expect(run).toMatchObject({ status: "EXITED", exitReason: "deleted" });
    expect((await w.runStore.get(run!.id))!.email).toBe("");
  });

  it("a suppressed send exits the run (suppressed); a contact not subscribed never enters", async () => {
    const a = await automation({ steps: WELCOME });
    w.mailer.suppressed.add("ann@example.test");
    await created(w.contacts.add({ email: "ann@example.test" }));
    expect(await created(w.contacts.add({ email: "off@example.test", status: "UNSUBSCRIBED" }))).toBe(0);
    await w.runner.tick();
    const runs = await runsOf(a.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "EXITED", exitReason: "suppressed" });
    expect(runs[0]!.steps[0]!.detail).toContain("suppressed");
  });

  it("deleting the automation exits its active runs (automation_deleted)", async () => {
    const a = await automation({ steps: WELCOME });
    await created(w.contacts.add({ email: "ann@example.test" }));
    await w.runner.tick();
    await w.automations.delete(TEST_WS, a.id);
    const [run] = (await w.control.list({ workspaceId: TEST_WS, contactId: "ctc_ann", limit: 5 })).runs;
    expect(run).toMatchObject({ status: "EXITED", exitReason: "automation_deleted" });
  });
});

describe("enrolment", () => {
  it("a redelivered trigger event makes one run; the started webhook is published again under the same id", async () => {
    const a = await automation({ steps: WELCOME, reentry: "always" });
    const ann = w.contacts.add({ email: "ann@example.test" });
    expect(await created(ann, "dev_same")).toBe(1);
    expect(await created(ann, "dev_same")).toBe(0);
    expect(await runsOf(a.id)).toHaveLength(1);
    const ids = w.events.ids();
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(1);
  });

  it("reentry once / always (not while a run is active) / after", async () => {
    const once = await automation({ steps: [{ id: "s", type: "send", template: "welcome" }] });
    const ann = w.contacts.add({ email: "ann@example.test" });
    await created(ann);
    await w.runner.tick();
    expect(await created(ann)).toBe(0);
    await w.automations.pause(TEST_WS, once.id);

    const always = await automation({ steps: [{ id: "p", type: "wait", duration: "PT10S" }], reentry: "always" });
    expect(await created(ann)).toBe(1);
    await w.runner.tick();
    expect(await created(ann)).toBe(0); // one active
    await after(10_000);
    expect(await created(ann)).toBe(1);
    await w.automations.pause(TEST_WS, always.id);

    await automation({ steps: [{ id: "q", type: "wait", duration: "PT1S" }], reentry: { after: "PT1H" } });
    expect(await created(ann)).toBe(1);
    await w.runner.tick();
    await after(2_000);
    expect(await created(ann)).toBe(0); // ended, but entered under an hour ago
    w.clock.advance(3600_000);
    expect(await created(ann)).toBe(1);
  });

  it("a trigger filter lets in only matching contacts", async () => {
    const a = await automation({ trigger: { type: "contact_created", filter: { "properties.plan": "pro" } }, steps: WELCOME });
    await created(w.contacts.add({ email: "pro@example.test", properties: { plan: "pro" } }));
    await created(w.contacts.add({ email: "free@example.test", properties: { plan: "free" } }));
    expect((await runsOf(a.id)).map((r) => r.contactId)).toEqual(["ctc_pro"]);
  });
});

describe("crashes", () => {
  it("a claim whose process died is taken over after its lease, and the send repeats its idempotency key (one email)", async () => {
    const a = await automation({ steps: [{ id: "s", type: "send", template: "welcome" }] });
    await created(w.contacts.add({ email: "ann@example.test" }));
    // The first process claims the run, sends, and dies before writing the step.
    const now = w.clock.now();
    const claim = await w.runStore.claimDue(now, new Date(now.getTime() + 30_000), 10);
    expect(claim.runs).toHaveLength(1);
    const first = await w.mailer.send(TEST_WS, { to: "ann@example.test", template: "welcome", variables: {}, idempotencyKey: sendKey(claim.runs[0]!.id, "s") });
    // Another process finds nothing while the lease holds…
    const other = w.newRunner();
    expect(await other.tick()).toBe(0);
    // …and takes the run over once it ran out.
    w.clock.advance(30_001);
    await other.tick();
    const [run] = await runsOf(a.id);
    expect(run).toMatchObject({ status: "COMPLETED" });
    expect(run!.steps[0]!.emailId).toBe((first as { emailId: string }).emailId);
    expect(w.mailer.sent).toHaveLength(1);
    // The dead process's late write is refused: its claim is gone.
    expect(await w.runStore.save({ run: claim.runs[0]!, lease: claim.lease, release: {} })).toBe(false);
  });

  it("a send the email service holds in progress is retried later, then recorded once", async () => {
    const a = await automation({ steps: [{ id: "s", type: "send", template: "welcome" }] });
    await created(w.contacts.add({ email: "ann@example.test" }));
    w.mailer.next.push({ kind: "retry", detail: "idempotency_request_in_progress" });
    await w.runner.tick();
    expect((await runsOf(a.id))[0]).toMatchObject({ status: "ACTIVE", currentStepId: "s" });
    await after(5_000);
    expect((await runsOf(a.id))[0]).toMatchObject({ status: "COMPLETED" });
    expect(w.mailer.sent).toHaveLength(1);
  });
});
