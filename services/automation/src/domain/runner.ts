/**
 * The claim loop (DESIGN §9.6): takes due runs with a lease (as the email scheduler does, a
 * batch at a time) and advances each through its version's step tree until it waits, ends
 * or must retry. Each step is written (guarded by the claim) before the next one starts, so
 * a process killed at any point leaves every run at a step it will do again, never one it
 * skipped; what doing a step again costs is nothing: a send repeats its idempotency key (the
 * email service answers with the first email), update_contact and the group steps set what
 * they set, a condition decided is written with its branch. Runs are processed many at
 * once; the ports batch what they can (one contact read, one SendBatch, one store
 * transaction for the runs of a round).
 */
import type { ExitReason, FilterJson, RunStep, Step } from "./model.js";
import type { AutomationCatalog, Clock, Logger } from "./ports.js";
import { Exits, type RunStore, type RunWrite, type StepDelta, type StoredRun } from "./runs.js";
import { StepTree } from "./steps.js";
import { durationMs } from "@mailroom/kit/durations.js";
import { isTimeZone, nextWallClock } from "@mailroom/kit/time-zones.js";

/** A contact as the engine reads it. */
export interface RunContact {
  id: string;
  email: string;
  firstName?: string;
  lastName?: string;
  timezone?: string;
  /** SUBSCRIBED, UNSUBSCRIBED, … */
  status: string;
  /** Custom properties by slug. */
  properties: Record<string, unknown>;
}

/** Contacts and groups (the audience unit) and workspace timezones (the accounts unit), as runs need them (implementations batch and cache). */
export interface ContactDirectory {
  /** The workspace's contact with this address; null when there is none. */
  contactByEmail(workspaceId: string, email: string): Promise<RunContact | null>;
  /** Whether the contact with this address matches the §9.4 filter. */
  matches(workspaceId: string, filter: FilterJson, email: string): Promise<boolean>;
  /** The workspace's timezone (IANA), if it has one. */
  workspaceTimezone(workspaceId: string): Promise<string | undefined>;
  updateContact(workspaceId: string, contactId: string, properties: Record<string, unknown>): Promise<void>;
  addToGroup(workspaceId: string, groupId: string, contactId: string): Promise<void>;
  removeFromGroup(workspaceId: string, groupId: string, contactId: string): Promise<void>;
}

export interface SendRequest {
  to: string;
  template: string;
  variables: Record<string, unknown>;
  trackOpens?: boolean;
  trackClicks?: boolean;
  idempotencyKey: string;
}

export type SendResult =
  | { kind: "sent"; emailId: string }
  /** The key was used by an earlier attempt with another payload (the contact changed since): it sent. */
  | { kind: "sent_before" }
  /** Recorded FAILED without sending (the address is suppressed). */
  | { kind: "suppressed"; emailId?: string; detail: string }
  /** Refused for good (template gone, monthly limit, invalid address). */
  | { kind: "refused"; detail: string }
  /** Not now (the key is held by an attempt in progress, the service is unavailable). */
  | { kind: "retry"; detail: string };

/** The email service, as send steps need it (implementations coalesce into SendBatch). */
export interface Mailer {
  send(workspaceId: string, request: SendRequest): Promise<SendResult>;
  /** The template an email was sent from (email_opened / email_clicked triggers naming one); undefined for none. */
  templateOf(workspaceId: string, emailId: string): Promise<string | undefined>;
}

export interface RunnerDeps {
  runs: RunStore;
  catalog: AutomationCatalog;
  contacts: ContactDirectory;
  mailer: Mailer;
  exits: Exits;
  clock: Clock;
  logger: Logger;
}

export interface RunnerOptions {
  /** How often to look for due runs when the last look found none. */
  intervalMs?: number;
  /** How long a claim holds before another process may take the run over. */
  leaseMs?: number;
  /** Runs advanced at once. */
  concurrency?: number;
  /** A step that must be tried again (send in progress elsewhere, a service down) waits this long. */
  retryMs?: number;
}

/** The idempotency key of a run's send step: the same on every attempt, in every process. */
export const sendKey = (runId: string, stepId: string) => `automation:${runId}:${stepId}`;

/** Step types that wait: entered once, completed at a later claim. */
const WAITING: ReadonlySet<Step["type"]> = new Set(["wait", "wait_until", "wait_for_event"]);

type Version = { tree: StepTree; status: string; deleted: boolean } | null;

/** What the runs of one claim share: versions, workspace timezones, contacts. */
class RoundCache {
  readonly versions = new Map<string, Promise<Version>>();
  readonly timezones = new Map<string, Promise<string | undefined>>();
  readonly contacts = new Map<string, Promise<RunContact | null>>();
}

/** Where a step left the run. */
type Outcome =
  | { kind: "next"; run: StoredRun; deltas: StepDelta[] }
  | { kind: "wait"; run: StoredRun; deltas: StepDelta[]; dueAt: Date }
  | { kind: "retry"; dueAt: Date }
  | { kind: "end"; run: StoredRun; deltas: StepDelta[]; announce: "completed" | "exited" };

export class Runner {
  private readonly intervalMs: number;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly retryMs: number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  /** Steps done since start (for tests and the log). */
  steps = 0;

  constructor(
    private readonly deps: RunnerDeps,
    opts: RunnerOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? 250;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.concurrency = opts.concurrency ?? 256;
    this.retryMs = opts.retryMs ?? 5_000;
  }

  /** Advances due runs until none is due; answers how many steps were done. */
  async tick(): Promise<number> {
    const inFlight = new Set<Promise<void>>();
    let done = 0;
    while (!this.stopped) {
      const free = this.concurrency - inFlight.size;
      if (free < Math.max(1, this.concurrency >> 2)) {
        await Promise.race(inFlight);
        continue;
      }
      const now = this.deps.clock.now();
      const { lease, runs } = await this.deps.runs.claimDue(now, new Date(now.getTime() + this.leaseMs), free);
      // What a claim's runs read (contacts, versions, timezones) is shared by them alone: a
      // tick lasts as long as runs keep coming due (minutes under load), and a cache that
      // lived as long would grow with every contact and serve stale properties.
      const cache = new RoundCache();
      for (const run of runs) {
        const p: Promise<void> = this.advance(run, lease, cache)
          .then((n) => void (done += n))
          .catch((err) => this.deps.logger.error({ err, runId: run.id }, "advancing a run failed; it is taken again when its claim runs out"))
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      if (runs.length < free) {
        // Nothing more due now: finish what is in flight (it may make more due), then look once more.
        if (!inFlight.size) break;
        await Promise.all(inFlight);
      }
    }
    await Promise.all(inFlight);
    this.steps += done;
    return done;
  }

  start(): void {
    this.stopped = false;
    const loop = async () => {
      if (this.stopped) return;
      this.running = this.tick().catch((err) => this.deps.logger.error({ err }, "run claim loop failed"));
      await this.running;
      if (!this.stopped) this.timer = setTimeout(loop, this.intervalMs);
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private version(run: StoredRun, cache: RoundCache): Promise<Version> {
    const key = `${run.automationId}:${run.version}`;
    let v = cache.versions.get(key);
    if (!v) {
      v = this.deps.catalog.version(run.workspaceId, run.automationId, run.version).then((found) =>
        found ? { tree: new StepTree(found.definition.steps), status: found.status, deleted: found.deleted } : null,
      );
      cache.versions.set(key, v);
    }
    return v;
  }

  /** Takes one claimed run as far as it goes now; answers the steps done. */
  private async advance(claimed: StoredRun, lease: string, cache: RoundCache): Promise<number> {
    const version = await this.version(claimed, cache);
    const now = this.deps.clock.now();
    if (!version || version.deleted) {
      const at = claimed.currentStepId ? [{ automationId: claimed.automationId, version: claimed.version, stepId: claimed.currentStepId, exited: 1 }] : [];
      await this.finish({ run: claimed, lease }, this.ended(claimed, "automation_deleted", now), at, "exited");
      return 0;
    }
    if (version.status !== "ACTIVE") {
      // Paused (held by RunControl, or the pause raced this claim): wait for release.
      await this.deps.runs.save({ run: { ...claimed, held: true }, lease, release: {} });
      return 0;
    }
    let run: StoredRun = { ...claimed, held: undefined };
    let done = 0;
    for (;;) {
      const outcome = await this.step(run, version.tree, cache);
      if (outcome.kind === "retry") {
        await this.deps.runs.save({ run, lease, release: { dueAt: outcome.dueAt } });
        return done;
      }
      if (outcome.kind === "end") {
        const landed = await this.finish({ run, lease }, outcome.run, outcome.deltas, outcome.announce);
        return done + (landed ? 1 : 0);
      }
      const write: RunWrite = { run: outcome.run, lease, deltas: outcome.deltas };
      if (outcome.kind === "wait") write.release = { dueAt: outcome.dueAt };
      if (!(await this.deps.runs.save(write))) return done; // the claim was lost: whoever holds the run goes on
      if (outcome.deltas.some((d) => d.completed)) done++;
      if (outcome.kind === "wait") {
        await this.awaitedAlready(run, outcome.run, version.tree);
        return done;
      }
      run = outcome.run;
    }
  }

  /**
   * A run just entered a wait_for_event: the event may have come between the run's arrival
   * at the step (the previous step's end, or its start) and now, when no run was waiting for
   * it yet. Checked after the wait is written, so an event recorded later signals the run itself.
   */
  private async awaitedAlready(before: StoredRun, waiting: StoredRun, tree: StepTree): Promise<void> {
    const stepId = waiting.currentStepId;
    const step = stepId ? tree.get(stepId) : undefined;
    if (step?.type !== "wait_for_event" || before.steps.some((s) => s.stepId === step.id)) return;
    const previous = before.steps.at(-1);
    const arrived = previous?.completedAt ?? before.startedAt;
    if (await this.deps.runs.eventSince(waiting.workspaceId, waiting.contactId, step.event, new Date(arrived))) {
      await this.deps.runs.signal(waiting.id, step.id, step.event, this.deps.clock.now());
    }
  }

  /** Writes a run's end; then its entry and its webhook, which follow the write. */
  private async finish(claim: { run: StoredRun; lease: string }, ended: StoredRun, deltas: StepDelta[], announce: "completed" | "exited"): Promise<boolean> {
    const landed = await this.deps.runs.save({ run: ended, lease: claim.lease, release: {}, deltas, announce });
    if (!landed) return false;
    await this.deps.runs.leave(ended.automationId, ended.contactId, ended.id);
    await this.deps.exits.announce(announce, ended, ended.endedAt ?? this.deps.clock.now());
    return true;
  }

  private ended(run: StoredRun, reason: ExitReason | undefined, at: Date): StoredRun {
    return {
      ...run,
      status: reason ? "EXITED" : "COMPLETED",
      exitReason: reason,
      endedAt: at,
      currentStepId: undefined,
      nextAt: undefined,
      waitEvent: undefined,
      eventArrived: undefined,
      held: undefined,
    };
  }

  private contact(run: StoredRun, cache: RoundCache): Promise<RunContact | null> {
    const key = `${run.workspaceId}\u0000${run.email}`;
    let c = cache.contacts.get(key);
    if (!c) {
      c = this.deps.contacts.contactByEmail(run.workspaceId, run.email);
      cache.contacts.set(key, c);
      c.catch(() => cache.contacts.delete(key));
    }
    return c;
  }

  private timezone(workspaceId: string, cache: RoundCache): Promise<string | undefined> {
    let tz = cache.timezones.get(workspaceId);
    if (!tz) {
      tz = this.deps.contacts.workspaceTimezone(workspaceId);
      cache.timezones.set(workspaceId, tz);
      tz.catch(() => cache.timezones.delete(workspaceId));
    }
    return tz;
  }

  /** Does (or goes on with) the run's current step. */
  private async step(run: StoredRun, tree: StepTree, cache: RoundCache): Promise<Outcome> {
    const now = this.deps.clock.now();
    const step = run.currentStepId ? tree.get(run.currentStepId) : undefined;
    if (!step) return this.end(run, undefined, now, []);
    const counted = (d: Omit<StepDelta, "automationId" | "version" | "stepId">): StepDelta => ({ automationId: run.automationId, version: run.version, stepId: step.id, ...d });
    const entry = run.steps.find((s) => s.stepId === step.id);

    if (entry && WAITING.has(step.type)) {
      const due = run.nextAt ?? now;
      if (step.type === "wait_for_event" && run.eventArrived) return this.complete(run, tree, step, { branch: "then" }, now, counted({ completed: 1 }));
      if (due.getTime() > now.getTime()) return { kind: "wait", run, deltas: [], dueAt: due }; // released early (activate): back to sleep
      return this.complete(run, tree, step, step.type === "wait_for_event" ? { branch: "else" } : {}, now, counted({ completed: 1 }));
    }

    // Entering the step (a step that never completed before a crash is done again).
    const entering: RunStep = { stepId: step.id, type: step.type, enteredAt: now };
    const steps = entry ? run.steps.filter((s) => s !== entry) : run.steps;
    const withEntry = (extra: Partial<RunStep> = {}) => [...steps, { ...entering, ...extra }];
    const enteredDelta = entry ? {} : { entered: 1 };

    switch (step.type) {
      case "wait": {
        const nextAt = new Date(now.getTime() + (durationMs(step.duration) ?? 1_000));
        return { kind: "wait", run: { ...run, steps: withEntry(), nextAt }, deltas: [counted(enteredDelta)], dueAt: nextAt };
      }
      case "wait_for_event": {
        const nextAt = new Date(now.getTime() + (durationMs(step.timeout) ?? 1_000));
        return { kind: "wait", run: { ...run, steps: withEntry(), nextAt, waitEvent: step.event, eventArrived: undefined }, deltas: [counted(enteredDelta)], dueAt: nextAt };
      }
      case "wait_until": {
        const contact = await this.contact(run, cache);
        if (!contact) return this.end(run, "contact_not_found", now, [counted({ exited: 1 })]);
        const workspaceTz = await this.timezone(run.workspaceId, cache);
        const contactTz = step.timezone === "workspace" ? undefined : contact.timezone;
        const tz = [contactTz, workspaceTz].find((z): z is string => Boolean(z) && isTimeZone(z!)) ?? "UTC";
        const nextAt = nextWallClock(now, step.time, step.days, tz);
        return { kind: "wait", run: { ...run, steps: withEntry(), nextAt }, deltas: [counted(enteredDelta)], dueAt: nextAt };
      }
      case "send": {
        const contact = await this.contact(run, cache);
        if (!contact) return this.end(run, "contact_not_found", now, [counted({ exited: 1 })]);
        if (contact.status !== "SUBSCRIBED") return this.end(run, "unsubscribed", now, [counted({ exited: 1 })]);
        const result = await this.deps.mailer.send(run.workspaceId, {
          to: contact.email,
          template: step.template,
          variables: mergeValues(contact),
          trackOpens: step.settings?.trackOpens,
          trackClicks: step.settings?.trackClicks,
          idempotencyKey: sendKey(run.id, step.id),
        });
        switch (result.kind) {
          case "retry":
            this.deps.logger.info({ runId: run.id, stepId: step.id, detail: result.detail }, "send to retry");
            return { kind: "retry", dueAt: new Date(now.getTime() + this.retryMs) };
          case "suppressed": {
            const ran = { ...run, steps: withEntry({ completedAt: now, emailId: result.emailId, detail: result.detail }) };
            return this.end(ran, "suppressed", now, [counted({ ...enteredDelta, exited: 1 })]);
          }
          case "refused": {
            const ran = { ...run, steps: withEntry({ detail: result.detail }) };
            return this.end(ran, "send_failed", now, [counted({ ...enteredDelta, exited: 1 })]);
          }
          case "sent":
            await this.deps.runs.rememberEmail(result.emailId, run.id);
            return this.complete({ ...run, steps: withEntry() }, tree, step, { emailId: result.emailId }, now, counted({ ...enteredDelta, completed: 1 }));
          case "sent_before":
            return this.complete({ ...run, steps: withEntry() }, tree, step, { detail: "sent by an earlier attempt" }, now, counted({ ...enteredDelta, completed: 1 }));
        }
        break;
      }
      case "condition": {
        const contact = await this.contact(run, cache);
        if (!contact) return this.end(run, "contact_not_found", now, [counted({ exited: 1 })]);
        const matched = await this.deps.contacts.matches(run.workspaceId, step.filter, contact.email);
        return this.complete({ ...run, steps: withEntry() }, tree, step, { branch: matched ? "then" : "else" }, now, counted({ ...enteredDelta, completed: 1 }));
      }
      case "update_contact":
        await this.deps.contacts.updateContact(run.workspaceId, run.contactId, step.properties);
        return this.complete({ ...run, steps: withEntry() }, tree, step, {}, now, counted({ ...enteredDelta, completed: 1 }));
      case "add_to_group":
        await this.deps.contacts.addToGroup(run.workspaceId, step.groupId, run.contactId);
        return this.complete({ ...run, steps: withEntry() }, tree, step, {}, now, counted({ ...enteredDelta, completed: 1 }));
      case "remove_from_group":
        await this.deps.contacts.removeFromGroup(run.workspaceId, step.groupId, run.contactId);
        return this.complete({ ...run, steps: withEntry() }, tree, step, {}, now, counted({ ...enteredDelta, completed: 1 }));
      case "exit": {
        const ran = { ...run, steps: withEntry({ completedAt: now }) };
        return this.end(ran, "exit_step", now, [counted({ ...enteredDelta, completed: 1 })]);
      }
    }
    return this.end(run, undefined, now, []);
  }

  /** Marks the current step done and moves to the next one (into a branch, or on). */
  private complete(run: StoredRun, tree: StepTree, step: Step, mark: Partial<RunStep>, now: Date, delta: StepDelta): Outcome {
    const steps = run.steps.map((s) => (s.stepId === step.id ? { ...s, ...mark, completedAt: now } : s));
    const next = mark.branch ? tree.enterBranch(step.id, mark.branch) : tree.after(step.id);
    const moved: StoredRun = { ...run, steps, nextAt: undefined, waitEvent: undefined, eventArrived: undefined };
    if (!next) return this.end(moved, undefined, now, [delta]);
    return { kind: "next", run: { ...moved, currentStepId: next.id }, deltas: [delta] };
  }

  private end(run: StoredRun, reason: ExitReason | undefined, now: Date, deltas: StepDelta[]): Outcome {
    return { kind: "end", run: this.ended(run, reason, now), deltas, announce: reason ? "exited" : "completed" };
  }
}

/** A send's merge values: the contact's properties by slug, and its built-ins. */
export function mergeValues(contact: RunContact): Record<string, unknown> {
  return {
    ...contact.properties,
    email: contact.email,
    ...(contact.firstName ? { firstName: contact.firstName } : {}),
    ...(contact.lastName ? { lastName: contact.lastName } : {}),
  };
}
