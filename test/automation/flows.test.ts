/**
 * Automations end to end (DESIGN §9.6, issue 29): every unit a real process, nats-server, the
 * SMTP sink and a webhook receiver. A welcome series with a wait and a condition delivers
 * exactly the right templates in order; wait_for_event takes its event branch or its timeout
 * branch; the run webhooks arrive once each; invalid definitions are refused with the step's
 * path. Durations of 1–3 s keep each test to seconds. Each test has its own workspace, so a
 * contact_created automation of one never enrols another's contacts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestSystem } from "../harness/system.js";
import { startReceiver, type Received } from "../webhooks/receiver.js";
import { automations, keyOf, mailsTo, sleep, startAutomationSystem, stepsById, until, waitingIn, workspace } from "./support.js";

const WELCOME = "ws_auto_welcome";
const EVENTS = "ws_auto_events";
const HOOKS = "ws_auto_hooks";
const BAD = "ws_auto_bad";
const BURST = "ws_auto_burst";

describe("automations through the public API (real processes)", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await startAutomationSystem([
      workspace(WELCOME, ["welcome-a", "welcome-b", "welcome-c"]),
      workspace(EVENTS, ["thanks-x", "nudge-y"]),
      workspace(HOOKS, ["hook-g"]),
      workspace(BAD, ["real"]),
      workspace(BURST, ["burst"]),
    ]);
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  it("welcome series: send A → wait 2 s → condition plan = pro → B, else C; exactly A then B / A then C", async () => {
    const auto = automations(sys, WELCOME);
    const automation = await auto.active({
      name: "Welcome",
      trigger: { type: "contact_created" },
      steps: [
        { id: "a", type: "send", template: "welcome-a" },
        { id: "pause", type: "wait", duration: "PT2S" },
        {
          id: "plan", type: "condition", filter: { "properties.plan": "pro" },
          then: [{ id: "b", type: "send", template: "welcome-b" }],
          else: [{ id: "c", type: "send", template: "welcome-c" }],
        },
      ],
    });
    expect(automation).toMatchObject({ status: "ACTIVE", version: 1, name: "Welcome", reentry: "once" });
    expect(automation.id).toMatch(/^aut_/);

    const pro = await auto.contact("pro@welcome.test", "Pia", { plan: "pro" });
    const free = await auto.contact("free@welcome.test", "Fred", { plan: "free" });

    const runs = await until("both runs COMPLETED", () => auto.runs(automation.id), (r) => r.length === 2 && r.every((x) => x.status === "COMPLETED"), 30_000);
    // Nothing more comes after the runs end.
    await sleep(1_500);
    const toPro = mailsTo(sys, "pro@welcome.test");
    const toFree = mailsTo(sys, "free@welcome.test");
    expect(toPro.map((m) => m.subject)).toEqual(["welcome-a for Pia", "welcome-b for Pia"]);
    expect(toFree.map((m) => m.subject)).toEqual(["welcome-a for Fred", "welcome-c for Fred"]);

    for (const [contact, mails, last, branch] of [[pro, toPro, "b", "then"], [free, toFree, "c", "else"]] as const) {
      const run = runs.find((r) => r.contactId === contact.id);
      expect(run, `a run for ${contact.properties.email}`).toBeDefined();
      expect(run).toMatchObject({ automationId: automation.id, version: 1, status: "COMPLETED" });
      expect(run.id).toMatch(/^run_/);
      expect(run.exitReason ?? undefined).toBeUndefined();
      expect(run.steps.map((s: { stepId: string }) => s.stepId)).toEqual(["a", "pause", "plan", last]);
      const steps = stepsById(run);
      expect(steps.plan.branch).toBe(branch);
      for (const s of run.steps) expect(Date.parse(s.completedAt) >= Date.parse(s.enteredAt), JSON.stringify(s)).toBe(true);
      // The wait is respected: at least 2 s between the first send and the second, on the
      // run's record and at the sink (the second message cannot arrive before the wait ended).
      expect(Date.parse(steps.pause.completedAt) - Date.parse(steps.pause.enteredAt)).toBeGreaterThanOrEqual(2_000);
      expect(Date.parse(steps[last].enteredAt) - Date.parse(steps.a.completedAt)).toBeGreaterThanOrEqual(2_000);
      expect(mails[1].receivedAt - Date.parse(steps.a.completedAt)).toBeGreaterThanOrEqual(2_000);
      expect(Date.parse(run.endedAt)).toBeGreaterThanOrEqual(Date.parse(steps[last].completedAt));
      // Each send step records its email: the email service knows it, to this contact.
      for (const id of ["a", last]) {
        expect(steps[id].emailId, `${id} has an emailId`).toEqual(expect.any(String));
        const email = await auto.api("GET", `/v1/emails/${steps[id].emailId}`);
        expect(email.status, JSON.stringify(email.body)).toBe(200);
        expect([email.body.email.to].flat()).toContain(contact.properties.email);
      }
    }

    const stats = await auto.stats(automation.id);
    expect(stats).toMatchObject({ automationId: automation.id, version: 1 });
    // Each step once, depth first (the condition's branches were once listed a second time).
    expect(stats.steps.map((s: any) => s.stepId)).toEqual(["a", "pause", "plan", "b", "c"]);
    const counts = Object.fromEntries(stats.steps.map((s: any) => [s.stepId, [s.type, s.entered, s.waiting, s.completed, s.exited]]));
    expect(counts).toEqual({
      a: ["send", 2, 0, 2, 0], pause: ["wait", 2, 0, 2, 0], plan: ["condition", 2, 0, 2, 0], b: ["send", 1, 0, 1, 0], c: ["send", 1, 0, 1, 0],
    });
    expect((await auto.get(automation.id)).runs).toEqual({ active: 0, completed: 2, exited: 0 });
    // One contact's runs, from its side.
    const mine = await auto.api("GET", `/v1/contacts/${pro.id}/automation-runs`);
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    expect(mine.body.runs.items.map((r: any) => [r.automationId, r.status])).toEqual([[automation.id, "COMPLETED"]]);
    // The contact's data export holds its runs too, as listed.
    const exported = await auto.api("GET", `/v1/contacts/${pro.id}/export`);
    expect(exported.status, JSON.stringify(exported.body)).toBe(200);
    expect(exported.body.automationRuns).toEqual(mine.body.runs.items);
  }, 45_000);

  it("wait_for_event: the event within the timeout takes `then`, none takes `else` after the timeout", async () => {
    const auto = automations(sys, EVENTS);
    const automation = await auto.active({
      name: "Purchase follow-up",
      trigger: { type: "contact_created" },
      steps: [{
        id: "bought", type: "wait_for_event", event: "purchased", timeout: "PT3S",
        then: [{ id: "x", type: "send", template: "thanks-x" }],
        else: [{ id: "y", type: "send", template: "nudge-y" }],
      }],
    });
    const buyer = await auto.contact("buyer@events.test", "Bea");
    const idle = await auto.contact("idle@events.test", "Ike");
    // The buyer's run waits at the step before the event comes.
    await until("the buyer waits for the event", () => auto.runs(automation.id, `contactId=${buyer.id}`), (r) => waitingIn(r[0], "bought"));
    const purchased = await auto.api("POST", "/v1/events", { event: "purchased", identify: { email: "buyer@events.test" } });
    expect(purchased.status, JSON.stringify(purchased.body)).toBe(200);
    const postedAt = Date.now();

    // An event that comes once the run exists, before the claim loop has entered the step, counts too.
    const quick = await auto.contact("quick@events.test", "Quincy");
    await until("the quick contact's run exists", () => auto.runs(automation.id, `contactId=${quick.id}`), (r) => r.length === 1);
    expect((await auto.api("POST", "/v1/events", { event: "purchased", identify: { email: "quick@events.test" } })).status).toBe(200);

    const runs = await until("the runs COMPLETED", () => auto.runs(automation.id), (r) => r.length === 3 && r.every((x) => x.status === "COMPLETED"), 20_000);
    await sleep(1_000);
    expect(mailsTo(sys, "quick@events.test").map((m) => m.subject)).toEqual(["thanks-x for Quincy"]);
    const toBuyer = mailsTo(sys, "buyer@events.test");
    const toIdle = mailsTo(sys, "idle@events.test");
    expect(toBuyer.map((m) => m.subject)).toEqual(["thanks-x for Bea"]);
    expect(toIdle.map((m) => m.subject)).toEqual(["nudge-y for Ike"]);

    const buyerRun = runs.find((r) => r.contactId === buyer.id);
    const idleRun = runs.find((r) => r.contactId === idle.id);
    const b = stepsById(buyerRun);
    const i = stepsById(idleRun);
    expect([b.bought.branch, i.bought.branch]).toEqual(["then", "else"]);
    expect(buyerRun.steps.map((s: any) => s.stepId)).toEqual(["bought", "x"]);
    expect(idleRun.steps.map((s: any) => s.stepId)).toEqual(["bought", "y"]);
    // The event ended the buyer's wait (well before the timeout); the idle one waited it out.
    expect(Date.parse(b.bought.completedAt) - Date.parse(b.bought.enteredAt)).toBeLessThan(3_000);
    expect(toBuyer[0].receivedAt - postedAt).toBeLessThan(2_900);
    expect(Date.parse(i.bought.completedAt) - Date.parse(i.bought.enteredAt)).toBeGreaterThanOrEqual(3_000);
    expect(toIdle[0].receivedAt - Date.parse(i.bought.enteredAt)).toBeGreaterThanOrEqual(3_000);
    expect([b.x.emailId, i.y.emailId]).toEqual([expect.any(String), expect.any(String)]);
  }, 40_000);

  it("AUTOMATION_RUN_STARTED, _COMPLETED and _EXITED reach a webhook once each, with the run as the API shows it", async () => {
    const auto = automations(sys, HOOKS);
    const hook = await auto.api("POST", "/v1/webhooks", {
      url: receiver.url, events: ["AUTOMATION_RUN_STARTED", "AUTOMATION_RUN_COMPLETED", "AUTOMATION_RUN_EXITED"], token: "hooks-secret",
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const automation = await auto.active({
      name: "Hooked",
      trigger: { type: "contact_created" },
      steps: [{ id: "w", type: "wait", duration: "PT2S" }, { id: "g", type: "send", template: "hook-g" }],
    });
    const stays = await auto.contact("stays@hooks.test", "Sam");
    const leaves = await auto.contact("leaves@hooks.test", "Lea");
    await until("the leaver waits", () => auto.runs(automation.id, `contactId=${leaves.id}`), (r) => waitingIn(r[0], "w"));
    const unsub = await auto.api("PUT", `/v1/contacts/${leaves.id}`, { properties: { status: "UNSUBSCRIBED" } });
    expect(unsub.status, JSON.stringify(unsub.body)).toBe(200);

    const runs = await until("one COMPLETED, one EXITED", () => auto.runs(automation.id), (r) => r.length === 2 && r.every((x) => x.status !== "ACTIVE"), 20_000);
    const done = runs.find((r) => r.contactId === stays.id);
    const exited = runs.find((r) => r.contactId === leaves.id);
    expect([done.status, exited.status, exited.exitReason]).toEqual(["COMPLETED", "EXITED", "unsubscribed"]);

    const mine = (r: Received) => r.event.data.automation?.id === automation.id;
    const ofType = (type: string) => receiver.received.filter((r) => r.event.type === type && mine(r));
    await until("four run webhooks", () => ofType("AUTOMATION_RUN_STARTED").length + ofType("AUTOMATION_RUN_COMPLETED").length + ofType("AUTOMATION_RUN_EXITED").length, (n) => n >= 4, 20_000);
    await sleep(1_000); // none more
    const started = ofType("AUTOMATION_RUN_STARTED");
    const completed = ofType("AUTOMATION_RUN_COMPLETED");
    const exits = ofType("AUTOMATION_RUN_EXITED");
    expect(started.map((r) => r.event.data.run.id).sort()).toEqual([done.id, exited.id].sort());
    expect(completed.map((r) => r.event.id)).toEqual([`${done.id}.completed`]);
    expect(exits.map((r) => r.event.id)).toEqual([`${exited.id}.exited`]);
    expect(started.map((r) => r.event.id).sort()).toEqual([`${done.id}.started`, `${exited.id}.started`].sort());
    for (const r of [...started, ...completed, ...exits]) {
      expect(r.event.workspaceId).toBe(HOOKS);
      expect(r.event.data.automation).toEqual({ id: automation.id, name: "Hooked", version: 1 });
    }
    // The final events carry the run as GET …/runs shows it once ended.
    expect(completed[0].event.data.run).toEqual(done);
    expect(exits[0].event.data.run).toEqual(exited);
    expect(started.find((r) => r.event.data.run.id === done.id)!.event.data.run).toMatchObject({ id: done.id, status: "ACTIVE", contactId: stays.id });
    for (const s of started) expect(receiver.received.indexOf(s)).toBeLessThan(receiver.received.indexOf([...completed, ...exits].find((e) => e.event.data.run.id === s.event.data.run.id)!));
    expect(mailsTo(sys, "leaves@hooks.test")).toEqual([]);
    expect(mailsTo(sys, "stays@hooks.test").map((m) => m.subject)).toEqual(["hook-g for Sam"]);
  }, 40_000);

  it("a burst: 120 runs due at the same moment (more than one SendBatch of the email service holds) each send their message", async () => {
    const auto = automations(sys, BURST);
    const automation = await auto.active({
      name: "Burst", trigger: { type: "event", name: "burst" },
      // Long enough for all 120 to be in it before the pause, on a loaded machine too (5 s was not:
      // on a slow CI run the first runs finished their wait before the last contacts entered).
      steps: [{ id: "w", type: "wait", duration: "PT20S" }, { id: "s", type: "send", template: "burst" }],
    });
    const emails = Array.from({ length: 120 }, (_, i) => `b${i}@burst.test`);
    const created = await auto.api("POST", "/v1/contacts/batch", { contacts: emails.map((email) => ({ properties: { email, firstName: "B" } })) });
    expect(created.status, JSON.stringify(created.body).slice(0, 300)).toBe(200);
    for (const part of [emails.slice(0, 100), emails.slice(100)]) {
      const posted = await auto.api("POST", "/v1/events/batch", { events: part.map((email) => ({ event: "burst", identify: { email } })) });
      expect(posted.body.accepted).toBe(part.length);
    }
    // Every run waits; held by a pause past the end of their waits, they are all due at once on activate.
    await until("120 runs wait", () => auto.runs(automation.id), (r) => r.length === 120 && r.every((x) => waitingIn(x, "w")));
    expect((await auto.api("POST", `/v1/automations/${automation.id}/pause`, {})).status).toBe(200);
    // Past the end of every run's wait: all 120 are due the moment the automation is activated.
    const waitEnds = (await auto.runs(automation.id)).map((r) => Date.parse(r.startedAt) + 20_000);
    await sleep(Math.max(0, Math.max(...waitEnds) - Date.now()) + 2_000);
    expect((await auto.api("POST", `/v1/automations/${automation.id}/activate`, {})).status).toBe(200);
    const runs = await until("120 runs ended", () => auto.runs(automation.id), (r) => r.every((x) => x.status !== "ACTIVE"), 30_000);
    const exited = runs.filter((r) => r.status !== "COMPLETED");
    expect(exited.map((r) => `${r.exitReason}: ${r.steps.at(-1)?.detail}`).slice(0, 3), `${exited.length} runs did not complete`).toEqual([]);
    await until("120 messages", () => sys.sink!.messages.filter((m) => m.to[0]?.endsWith("@burst.test")).length, (n) => n >= 120, 20_000);
    expect(new Set(sys.sink!.messages.flatMap((m) => m.to).filter((t) => t.endsWith("@burst.test"))).size).toBe(120);
  }, 150_000);

  it("refuses invalid definitions with 400 invalid_automation naming the step path; unknown ids are 404; states 409", async () => {
    const auto = automations(sys, BAD);
    const trigger = { type: "contact_created" };
    const cases: Array<[string, unknown[], string]> = [
      ["unknown template", [{ id: "s", type: "send", template: "missing" }], "steps[0].template"],
      ["unknown template in a branch", [
        { id: "w", type: "wait", duration: "PT1S" },
        { id: "c", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "s", type: "send", template: "missing" }] },
      ], "steps[1].then[0].template"],
      ["wait_for_event without timeout", [{ id: "e", type: "wait_for_event", event: "purchased", then: [{ id: "s", type: "send", template: "real" }] }], "steps[0].timeout"],
      ["an empty then", [{ id: "c", type: "condition", filter: { "properties.plan": "pro" }, then: [] }], "steps[0].then"],
      ["an empty else", [{ id: "c", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "s", type: "send", template: "real" }], else: [] }], "steps[0].else"],
      ["a wait under 1 s", [{ id: "w", type: "wait", duration: "PT0S" }], "steps[0].duration"],
      ["a duplicate step id", [{ id: "s", type: "send", template: "real" }, { id: "s", type: "wait", duration: "PT1S" }], "steps[1].id"],
    ];
    for (const [what, steps, path] of cases) {
      const res = await auto.api("POST", "/v1/automations", { name: what, trigger, steps });
      expect([what, res.status, res.body.code], JSON.stringify(res.body)).toEqual([what, 400, "invalid_automation"]);
      expect(res.body.message, what).toMatch(new RegExp(`^${path.replace(/[[\].]/g, "\\$&")}: `));
      expect(res.body.path, what).toBe(path);
    }
    // A PATCH is validated the same way, and the automation stays as it was.
    const good = await auto.create({ name: "Good", trigger, steps: [{ id: "s", type: "send", template: "real" }] });
    expect(good).toMatchObject({ status: "DRAFT", version: 1 });
    const patched = await auto.api("PATCH", `/v1/automations/${good.id}`, { steps: [{ id: "s", type: "send", template: "missing" }] });
    expect([patched.status, patched.body.code, patched.body.path]).toEqual([400, "invalid_automation", "steps[0].template"]);
    expect((await auto.get(good.id)).version).toBe(1);

    const pauseDraft = await auto.api("POST", `/v1/automations/${good.id}/pause`, {});
    expect([pauseDraft.status, pauseDraft.body.code]).toEqual([409, "automation_state"]);

    const unknown = "aut_01jqz8k4m2x7v9c3n5b6t1w0ye";
    for (const [method, path, body] of [
      ["GET", "", undefined], ["PATCH", "", { name: "x" }], ["DELETE", "", undefined], ["POST", "/activate", {}], ["POST", "/pause", {}],
      ["GET", "/runs", undefined], ["GET", "/stats", undefined],
    ] as const) {
      const res = await auto.api(method, `/v1/automations/${unknown}${path}`, body);
      expect([method, path, res.status, res.body.code]).toEqual([method, path, 404, "automation_not_found"]);
    }
    // Another workspace's automation is unknown here too.
    const other = await sys.api("GET", `/v1/automations/${good.id}`, { key: keyOf(HOOKS) });
    expect([other.status, other.body.code]).toEqual([404, "automation_not_found"]);
  });
});
