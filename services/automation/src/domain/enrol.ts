/**
 * What events do to runs (DESIGN §9.6): a trigger enrols a subscribed contact that matches
 * the trigger's filter, as the automation's reentry rule allows; an unsubscribe or a
 * deletion ends the contact's runs; an awaited event moves a waiting run on; a suppression
 * of an email a run sent ends that run. The run id is derived from the automation and the
 * triggering event's id, so a redelivered event finds its run and never makes a second.
 */
import { createHash } from "node:crypto";
import type { Automation, ExitReason, Reentry, Run, RUN_EMAIL_EVENTS, Trigger, TriggerType } from "./model.js";
import type { AutomationCatalog, Clock, Logger } from "./ports.js";
import type { ContactDirectory, Mailer, RunContact } from "./runner.js";
import type { EntryRule, Exits, RunEventPublisher, RunStore, StoredRun } from "./runs.js";
import { StepTree } from "./steps.js";
import { durationMs } from "@mailroom/kit/durations.js";

/** A contact as an event names it: its id and address, and its status when the event carries it. */
export interface EventContact {
  id?: string;
  email: string;
  status?: string;
}

/** An event that may start runs. */
export interface TriggerEvent {
  /** The event's own id (a DIRECTORY_EVENTS event's, a contact event's, a mail event's). */
  eventId: string;
  workspaceId: string;
  type: TriggerType;
  contact: EventContact;
  /** Whether an automation's trigger (of `type`) is this event's. */
  matches(trigger: Trigger): boolean | Promise<boolean>;
}

export interface EnrolmentDeps {
  runs: RunStore;
  catalog: AutomationCatalog;
  contacts: ContactDirectory;
  mailer: Pick<Mailer, "templateOf">;
  exits: Exits;
  events: RunEventPublisher;
  clock: Clock;
  logger: Logger;
}

/** `run_` and 26 hex digits of the automation and the triggering event: the same event, the same run. */
export function runIdOf(automationId: string, eventId: string): string {
  return `run_${createHash("sha256").update(`${automationId}\u0000${eventId}`).digest("hex").slice(0, 26)}`;
}

export function entryRuleOf(reentry: Reentry): EntryRule {
  if (reentry === "once") return { kind: "once" };
  if (reentry === "always") return { kind: "always" };
  return { kind: "after", ms: durationMs(reentry.after) ?? Number.MAX_SAFE_INTEGER };
}

export class Enrolment {
  constructor(private readonly deps: EnrolmentDeps) {}

  /** Enrols the event's contact in every active automation it triggers; answers the runs started. */
  async trigger(event: TriggerEvent): Promise<number> {
    const candidates = await this.deps.catalog.activeWithTrigger(event.workspaceId, event.type);
    if (!candidates.length) return 0;
    const automations: Automation[] = [];
    for (const a of candidates) if (await event.matches(a.trigger)) automations.push(a);
    if (!automations.length) return 0;
    const contact = await this.contactOf(event);
    if (!contact || contact.status !== "SUBSCRIBED") return 0;
    const started = await Promise.all(automations.map((a) => this.enrol(a, contact, event.eventId)));
    return started.filter(Boolean).length;
  }

  private async contactOf(event: TriggerEvent): Promise<{ id: string; email: string; status: string } | null> {
    const c = event.contact;
    if (c.id && c.status) return { id: c.id, email: c.email, status: c.status };
    const found: RunContact | null = await this.deps.contacts.contactByEmail(event.workspaceId, c.email);
    if (!found || (c.id && found.id !== c.id)) return null;
    return { id: found.id, email: found.email, status: found.status };
  }

  private async enrol(automation: Automation, contact: { id: string; email: string }, eventId: string): Promise<boolean> {
    const { workspaceId, id: automationId } = automation;
    if (automation.trigger.filter && !(await this.deps.contacts.matches(workspaceId, automation.trigger.filter, contact.email))) return false;
    const first = new StepTree(automation.steps).first();
    if (!first) return false;
    const runId = runIdOf(automationId, eventId);
    const now = this.deps.clock.now();
    if (!(await this.deps.runs.enter(automationId, contact.id, runId, entryRuleOf(automation.reentry), now))) return false;
    const run: StoredRun = {
      id: runId,
      workspaceId,
      automationId,
      version: automation.version,
      contactId: contact.id,
      email: contact.email,
      automationName: automation.name,
      status: "ACTIVE",
      currentStepId: first.id,
      startedAt: now,
      steps: [],
    };
    const inserted = await this.deps.runs.insert(run, now);
    // A redelivery announces the run as stored (its first handling may have died before publishing).
    const stored = inserted ? run : await this.deps.runs.get(runId);
    if (stored) await this.deps.events.publish("started", stored, stored.startedAt);
    return inserted;
  }

  /** Ends every active run of the contact (unsubscribed, deleted). */
  async exitContact(workspaceId: string, contactId: string, reason: ExitReason): Promise<number> {
    const runs = await this.deps.runs.activeOfContact(workspaceId, contactId);
    const exited = await Promise.all(runs.map((r) => this.deps.exits.exit(r.id, reason)));
    // A deleted contact may be an erased one (DELETE ?erase=true): no run keeps its address.
    if (reason === "deleted") await this.deps.runs.forgetContact(workspaceId, contactId);
    return exited.filter(Boolean).length;
  }

  /**
   * A custom event of the contact: its runs waiting for it go into `then`. Remembered first:
   * a run that arrived at its wait_for_event but is not in it yet (the claim loop enters it
   * a moment later) finds it there, and one already in it is signalled below.
   */
  async customEvent(workspaceId: string, contactId: string, name: string, at?: Date): Promise<number> {
    // A contact in no run has nothing to remember it for: a run that starts later counts only
    // events after its start (most events are triggers, or about contacts in no automation).
    if (!(await this.deps.runs.activeOfContact(workspaceId, contactId)).length) return 0;
    await this.deps.runs.sawEvent(workspaceId, contactId, name, at ?? this.deps.clock.now());
    // Read again after remembering: a run that entered its wait meanwhile is signalled here,
    // or finds the event when it looks (runner.awaitedAlready); never neither.
    const runs = await this.deps.runs.activeOfContact(workspaceId, contactId);
    return this.signal(runs.filter((r) => r.waitEvent === name), name);
  }

  /** An open, a click or a reply of an email: the run that sent it, if it waits for that. */
  async emailEvent(workspaceId: string, emailId: string, event: (typeof RUN_EMAIL_EVENTS)[number]): Promise<number> {
    const run = await this.runOfEmail(workspaceId, emailId);
    return run && run.waitEvent === event ? this.signal([run], event) : 0;
  }

  /** An email a run sent was suppressed at delivery: the run ends. */
  async emailSuppressed(workspaceId: string, emailId: string): Promise<boolean> {
    const run = await this.runOfEmail(workspaceId, emailId);
    return run ? this.deps.exits.exit(run.id, "suppressed") : false;
  }

  /** An address was suppressed (a hard bounce of any email to it): the contact's runs end. */
  async addressSuppressed(workspaceId: string, email: string, contactId?: string): Promise<number> {
    const id = contactId ?? (await this.deps.contacts.contactByEmail(workspaceId, email))?.id;
    return id ? this.exitContact(workspaceId, id, "suppressed") : 0;
  }

  /** The template an email was sent from, for a trigger naming one. */
  templateOf(workspaceId: string, emailId: string): Promise<string | undefined> {
    return this.deps.mailer.templateOf(workspaceId, emailId);
  }

  private async runOfEmail(workspaceId: string, emailId: string): Promise<StoredRun | null> {
    const runId = await this.deps.runs.runOfEmail(emailId);
    if (!runId) return null;
    const run = await this.deps.runs.get(runId);
    return run && run.workspaceId === workspaceId && run.status === "ACTIVE" ? run : null;
  }

  private async signal(runs: Run[], event: string): Promise<number> {
    const now = this.deps.clock.now();
    const moved = await Promise.all(runs.map((r) => (r.currentStepId ? this.deps.runs.signal(r.id, r.currentStepId, event, now) : false)));
    return moved.filter(Boolean).length;
  }
}
