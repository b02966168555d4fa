/**
 * The automation model (DESIGN §9.6), in the public API's terms: a definition is what a
 * client sends (trigger, steps, reentry) and what runs follow; a run is one contact's way
 * through one version of it. No protobuf, store or NATS here.
 */
import type { Weekday } from "@mailroom/kit/time-zones.js";

export const STEP_TYPES = [
  "wait",
  "wait_until",
  "send",
  "condition",
  "wait_for_event",
  "update_contact",
  "add_to_group",
  "remove_from_group",
  "exit",
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const TRIGGER_TYPES = ["contact_created", "event", "group_joined", "property_changed", "email_opened", "email_clicked"] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** A JSON filter in the §9.4 grammar, as given (the audience unit evaluates it). */
export type FilterJson = Record<string, unknown>;

export type Trigger = (
  | { type: "contact_created" }
  /** A custom event (`POST /v1/events` name). */
  | { type: "event"; name: string }
  /** Group id as stored (`grp_…`; a publicId given at create is resolved to the id). */
  | { type: "group_joined"; groupId: string }
  /** A property's API slug, or a built-in field (firstName, lastName, …). */
  | { type: "property_changed"; property: string }
  /** An open or click of a broadcast (broadcastId) or of a templated email (template name); neither: any. */
  | { type: "email_opened" | "email_clicked"; broadcastId?: string; template?: string }
) & { filter?: FilterJson };


/** Custom event names, plus these: an open, a click or a reply (DESIGN §10.4) of an email this run sent. */
export const RUN_EMAIL_EVENTS = ["email_opened", "email_clicked", "email_replied"] as const;

export type Step =
  /** `duration`: ISO 8601 (PT2S, P1D, P1W…), at least 1 s. */
  | { id: string; type: "wait"; duration: string }
  /** The next `time` (HH:MM, 24 h) on one of `days` (default every day) in the contact's (default) or the workspace's timezone. */
  | { id: string; type: "wait_until"; time: string; days?: Weekday[]; timezone?: "contact" | "workspace" }
  /** A stored template by name (or id); merge values from the contact. */
  | { id: string; type: "send"; template: string; settings?: { trackOpens?: boolean; trackClicks?: boolean } }
  /** `then` is non-empty; `else` may be left out, but is not empty when given. Both rejoin after the condition. */
  | { id: string; type: "condition"; filter: FilterJson; then: Step[]; else?: Step[] }
  /** `event` as in RUN_EMAIL_EVENTS or a custom event name; `then` when it comes before `timeout`, `else` after. */
  | { id: string; type: "wait_for_event"; event: string; timeout: string; then: Step[]; else?: Step[] }
  | { id: string; type: "update_contact"; properties: Record<string, unknown> }
  | { id: string; type: "add_to_group" | "remove_from_group"; groupId: string }
  | { id: string; type: "exit" };

/** Who may enter again: never (default), whenever no run of theirs is active, or once the last entry is this old. */
export type Reentry = "once" | "always" | { after: string };

export interface Definition {
  trigger: Trigger;
  steps: Step[];
  reentry: Reentry;
}

export type AutomationStatus = "DRAFT" | "ACTIVE" | "PAUSED";

export interface Automation extends Definition {
  id: string;
  workspaceId: string;
  name: string;
  status: AutomationStatus;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export type RunStatus = "ACTIVE" | "COMPLETED" | "EXITED";

export type ExitReason =
  | "unsubscribed"
  | "deleted"
  | "suppressed"
  | "exit_step"
  | "automation_deleted"
  | "send_failed"
  | "contact_not_found";

export interface RunStep {
  stepId: string;
  type: StepType;
  enteredAt: Date;
  completedAt?: Date;
  emailId?: string;
  branch?: "then" | "else";
  detail?: string;
}

export interface Run {
  id: string;
  workspaceId: string;
  automationId: string;
  version: number;
  contactId: string;
  status: RunStatus;
  /** The step the run is at; undefined once ended. */
  currentStepId?: string;
  /** When the claim loop should look at it next (end of a wait, a wait_for_event's timeout). */
  nextAt?: Date;
  startedAt: Date;
  endedAt?: Date;
  exitReason?: ExitReason;
  steps: RunStep[];
}

export interface StepCounts {
  stepId: string;
  type: StepType;
  entered: number;
  waiting: number;
  completed: number;
  exited: number;
}

/** A definition refused: the JSON path of the fault (`steps[2].then[0].template`) and what is wrong. */
export interface DefinitionError {
  path: string;
  message: string;
}
