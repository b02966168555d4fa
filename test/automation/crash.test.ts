/**
 * Runs survive a kill -9 (DESIGN §9.6: runs live in the store, sends carry the idempotency
 * key `automation:<runId>:<stepId>`). 50 contacts enter `send → wait 1 s → send` at once; the
 * automation unit is killed with SIGKILL during each send step and started again, and
 * separately the email service is killed while the first sends go out. Every contact gets
 * each message exactly once (counted at the sink by recipient and subject, and by Message-ID),
 * and every run ends COMPLETED.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UnitName } from "../../deploy/processes.js";
import type { TestSystem } from "../harness/system.js";
import { asMail, automations, sleep, startAutomationSystem, until, workspace } from "./support.js";

const CONTACTS = 50;
const KILL_AUTOMATION = "ws_auto_kill_unit";
const KILL_EMAIL = "ws_auto_kill_email";

describe("automation runs across kill -9 (real processes)", () => {
  let sys: TestSystem;

  beforeAll(async () => {
    // A short lease: the restarted unit takes over the killed one's claimed runs after 3 s, not the default 30.
    sys = await startAutomationSystem([workspace(KILL_AUTOMATION, ["one", "two"]), workspace(KILL_EMAIL, ["one", "two"])], {
      MAILROOM_AUTOMATION_LEASE_MS: "3000",
      // Sends in SendBatch calls of 10 rather than one of 50: a kill lands between and inside them.
      MAILROOM_AUTOMATION_SEND_BATCH: "10",
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  /** Messages the sink received in one workspace's domain. */
  const mailsIn = (domain: string) => sys.sink!.messages.filter((m) => m.to.some((t) => t.endsWith(`@${domain}`))).map(asMail);

  /** Enrols CONTACTS contacts (one batch request: their contact_created events) into `send one → wait 1 s → send two`. */
  async function start(ws: string, domain: string) {
    const auto = automations(sys, ws);
    const automation = await auto.active({
      name: "Drip", trigger: { type: "contact_created" },
      steps: [{ id: "one", type: "send", template: "one" }, { id: "w", type: "wait", duration: "PT1S" }, { id: "two", type: "send", template: "two" }],
    });
    const batch = await auto.api("POST", "/v1/contacts/batch", {
      contacts: Array.from({ length: CONTACTS }, (_, i) => ({ properties: { email: `c${i}@${domain}`, firstName: `C${i}` } })),
    });
    expect(batch.status, JSON.stringify(batch.body).slice(0, 500)).toBe(200);
    expect(batch.body.summary.created).toBe(CONTACTS);
    return { auto, automation };
  }

  /** Kills `unit` with SIGKILL once `progress()` reaches `n`, starts it again `downMs` later; returns `progress()` at the kill. */
  async function killWhen(unit: UnitName, progress: () => number | Promise<number>, n: number, downMs: number) {
    await until(`the moment to kill ${unit}`, progress, (v) => v >= n, 30_000);
    await sys.processes.kill(unit, "SIGKILL");
    const atKill = await progress();
    await sleep(downMs);
    await sys.processes.restart(unit);
    return atKill;
  }

  /** Every contact got `one` then `two`, each exactly once; every run COMPLETED with both emails recorded. */
  async function expectExactlyOnce(domain: string, auto: ReturnType<typeof automations>, automationId: string) {
    const since = Date.now();
    await until("every message at the sink", () => mailsIn(domain).length, (n) => n >= 2 * CONTACTS, 60_000).catch(async (err) => {
      throw new Error(`${err.message}\nautomation log:\n${await sys.log("automation")}\nemail log:\n${await sys.log("email")}`);
    });
    const atSink = Date.now();
    const runs = await until("every run COMPLETED", () => auto.runs(automationId), (r) => r.length === CONTACTS && r.every((x) => x.status === "COMPLETED"), 30_000);
    console.info(`after the restart: every message at the sink in ${((atSink - since) / 1000).toFixed(1)} s, every run COMPLETED ${((Date.now() - atSink) / 1000).toFixed(1)} s later`);
    await sleep(2_000); // a late duplicate would come now
    const mails = mailsIn(domain);
    const perRecipient = new Map<string, string[]>();
    for (const m of mails) perRecipient.set(m.to, [...(perRecipient.get(m.to) ?? []), m.subject]);
    const wrong = [...perRecipient].filter(([to, subjects]) => {
      const name = `C${to.slice(1, to.indexOf("@"))}`;
      return subjects.join("|") !== `one for ${name}|two for ${name}`;
    });
    expect(wrong, "recipients that did not get exactly one then two").toEqual([]);
    expect(perRecipient.size).toBe(CONTACTS);
    expect(mails).toHaveLength(2 * CONTACTS);
    expect(new Set(mails.map((m) => m.messageId)).size).toBe(2 * CONTACTS);
    // Each run recorded one email per send step, and no two runs share one.
    const emailIds = runs.flatMap((r) => r.steps.filter((s: any) => s.type === "send").map((s: any) => s.emailId));
    expect(emailIds).toHaveLength(2 * CONTACTS);
    expect(emailIds.every((id) => typeof id === "string" && id.length > 0)).toBe(true);
    expect(new Set(emailIds).size).toBe(2 * CONTACTS);
  }

  it("the automation unit killed during the first and during the second send step: each message exactly once", async () => {
    const domain = "killunit.test";
    const { auto, automation } = await start(KILL_AUTOMATION, domain);
    const count = (subject: string) => mailsIn(domain).filter((m) => m.subject.startsWith(subject)).length;
    const atFirstKill = await killWhen("automation", () => count("one "), 1, 500);
    const atSecondKill = await killWhen("automation", () => count("two "), 1, 500);
    console.info(`automation killed with ${atFirstKill}/${CONTACTS} first and ${atSecondKill}/${CONTACTS} second messages at the sink`);
    await expectExactlyOnce(domain, auto, automation.id);
  }, 120_000);

  it("the email service killed while the first sends go out: each message exactly once", async () => {
    const domain = "killemail.test";
    const { auto, automation } = await start(KILL_EMAIL, domain);
    // Killed as soon as a first send is recorded on a run: the others are being sent. Down for
    // 2 s: the automation's sends fail meanwhile and must be retried with their keys.
    const firstSends = async () => (await auto.runs(automation.id)).filter((r) => r.steps.some((s: any) => s.stepId === "one" && s.emailId)).length;
    const atKill = await killWhen("email", firstSends, 1, 2_000);
    console.info(`email service killed with ${atKill}/${CONTACTS} first sends recorded`);
    await expectExactlyOnce(domain, auto, automation.id);
  }, 120_000);
});
