/**
 * What the automation domain needs from the outside world, and the one seam between its two
 * halves: the catalog of automations (automations.ts: create, versions, activate, pause,
 * delete) and the run engine (enrolment, the claim loop, exits, stats). Implementations of
 * the I/O live in ../adapters/; unit tests pass in-memory ones (../testing.ts).
 */
import type { Logger } from "@mailroom/kit/logger.js";
import type { Automation, AutomationStatus, Definition, ExitReason, Run, RunStatus, Step, StepCounts, TriggerType } from "./model.js";

export type { Logger };

/** kit's one clock. */
export type { Clock } from "@mailroom/kit/clock.js";

/** The automations and their versions, as the run engine reads them. */
export interface AutomationCatalog {
  /** One version's definition (versions never change once written: cache freely) and the automation's state now. */
  version(workspaceId: string, automationId: string, version: number): Promise<{ definition: Definition; status: AutomationStatus; deleted: boolean } | null>;
  /** The workspace's ACTIVE automations whose trigger is of this type (enrolment; may be cached for a second or two). */
  activeWithTrigger(workspaceId: string, type: TriggerType): Promise<Automation[]>;
}

/** What the catalog's use cases need from the run engine. */
export interface RunControl {
  /** Pause: the automation's active runs hold where they are (the claim loop skips them). */
  hold(workspaceId: string, automationId: string): Promise<void>;
  /** Activate after a pause: held runs go on (a wait that ended meanwhile continues at once). */
  release(workspaceId: string, automationId: string): Promise<void>;
  /** Delete: every active run of the automation exits with this reason. */
  exitAll(workspaceId: string, automationId: string, reason: ExitReason): Promise<void>;
  /** Runs of every version, by status. */
  counts(workspaceId: string, automationId: string): Promise<{ active: number; completed: number; exited: number }>;
  /** Newest first. With automationId unset, one contact's runs in every automation (contactId then required). */
  list(query: {
    workspaceId: string;
    automationId?: string;
    contactId?: string;
    status?: RunStatus;
    limit: number;
    cursor?: string;
  }): Promise<{ runs: Run[]; nextCursor?: string }>;
  /** Per step of `steps` (one version's, all of them, depth first): entered, waiting, completed, exited. */
  stats(workspaceId: string, automationId: string, version: number, steps: readonly Step[]): Promise<StepCounts[]>;
}
