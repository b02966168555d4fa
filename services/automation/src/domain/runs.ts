/**
 * Runs as the engine stores them, the store port the engine writes them through, and the
 * RunControl the catalog's use cases call (pause, activate, delete, lists, stats).
 *
 * Stats: entered / completed / exited per (automation, version, step) are counters bumped
 * with the run write that caused them (one batched $inc per flush); `waiting` is not a
 * counter but an indexed count of the active runs whose current step it is, so it is
 * exact whatever happened to a process between two writes. Counts per status are indexed
 * counts too.
 */
import type { ExitReason, Run, RunStatus, Step, StepCounts } from "./model.js";
import type { Clock, Logger, RunControl } from "./ports.js";

/** A run with what only the engine needs. */
export interface StoredRun extends Run {
  /** The contact's address when it entered (contacts keep theirs): batched contact reads and sends. */
  email: string;
  /** The automation's name when the run entered (for its webhooks). */
  automationName: string;
  /** wait_for_event: the event awaited while the run is in that step. */
  waitEvent?: string;
  /** wait_for_event: the awaited event came (the run goes into `then` at its next claim). */
  eventArrived?: boolean;
  /** Paused automation: the claim loop leaves the run alone until release. */
  held?: boolean;
}

/** Counter increments of one step of one version. */
export interface StepDelta {
  automationId: string;
  version: number;
  stepId: string;
  entered?: number;
  completed?: number;
  exited?: number;
}

/** A claimed run's new state, written only while the claim (`lease`) still holds. */
export interface RunWrite {
  run: StoredRun;
  lease: string;
  /** Give the claim up: the run is next due at `dueAt` (absent: never by time — ended or held). */
  release?: { dueAt?: Date };
  /** Counters bumped when (and only when) the write lands. */
  deltas?: StepDelta[];
  /** The run ended: its webhook is owed until `announced`. */
  announce?: "completed" | "exited";
}

export type EntryRule = { kind: "once" } | { kind: "always" } | { kind: "after"; ms: number };

export interface RunQuery {
  workspaceId: string;
  automationId?: string;
  contactId?: string;
  status?: RunStatus;
  limit: number;
  cursor?: string;
}

export interface RunStore {
  /** Stores a new run, due at `dueAt`; false when a run with its id exists (a redelivered trigger). */
  insert(run: StoredRun, dueAt: Date): Promise<boolean>;
  /**
   * Claims up to `limit` runs due by `now` (and runs whose claim ran out: their holder died),
   * each with a compare-and-set, for this claim's `lease` until `leaseUntil`.
   */
  claimDue(now: Date, leaseUntil: Date, limit: number): Promise<{ lease: string; runs: StoredRun[] }>;
  /** Writes a claimed run's state; false when the claim was lost (taken over, exited meanwhile). */
  save(write: RunWrite): Promise<boolean>;
  get(runId: string): Promise<StoredRun | null>;
  /** The contact's active runs (any automation). */
  activeOfContact(workspaceId: string, contactId: string): Promise<StoredRun[]>;
  /**
   * ACTIVE → EXITED now, whoever holds it (a claim in flight loses its write): the run as it
   * ended and the step it was at, or null when it was not active.
   */
  exit(runId: string, reason: ExitReason, at: Date): Promise<{ run: StoredRun; atStep?: string } | null>;
  /** A contact's custom event came at `at` (kept a day): a run entering a wait_for_event after it arrived there counts it. */
  sawEvent(workspaceId: string, contactId: string, name: string, at: Date): Promise<void>;
  /** Whether the contact's event of that name came at or after `since`. */
  eventSince(workspaceId: string, contactId: string, name: string, since: Date): Promise<boolean>;
  /** wait_for_event: the run in `stepId` awaiting `event` takes `then` at once; false when it is not (any more) waiting. */
  signal(runId: string, stepId: string, event: string, at: Date): Promise<boolean>;
  hold(automationId: string): Promise<number>;
  release(automationId: string, at: Date): Promise<number>;
  /** Ids of an automation's active runs (a page, for exitAll). */
  activeIds(automationId: string, limit: number): Promise<string[]>;
  counts(automationId: string): Promise<{ active: number; completed: number; exited: number }>;
  list(query: RunQuery): Promise<{ runs: StoredRun[]; nextCursor?: string }>;
  /** Active runs per current step of one version. */
  waiting(automationId: string, version: number, stepIds: string[]): Promise<Map<string, number>>;
  counters(automationId: string, version: number): Promise<Map<string, { entered: number; completed: number; exited: number }>>;
  bump(deltas: StepDelta[]): Promise<void>;
  /**
   * Reentry (compare-and-set on one entry document per automation and contact): true when
   * `runId` may start — the rule allows it, or this very run already holds the entry (a
   * redelivered trigger whose first handling died before the run was stored).
   */
  enter(automationId: string, contactId: string, runId: string, rule: EntryRule, now: Date): Promise<boolean>;
  /** The run ended: the contact's entry no longer names an active run. */
  leave(automationId: string, contactId: string, runId: string): Promise<void>;
  /** The contact was deleted (perhaps erased): its runs, ended, keep no address. */
  forgetContact(workspaceId: string, contactId: string): Promise<void>;
  /** Emails a run sent, for opens, clicks and suppressions of them. */
  rememberEmail(emailId: string, runId: string): Promise<void>;
  runOfEmail(emailId: string): Promise<string | null>;
  /** Ended runs whose webhook may not have gone out (the process died before), ended before `before`. */
  unannounced(before: Date, limit: number): Promise<StoredRun[]>;
  announced(runIds: string[]): Promise<void>;
}

/** Webhooks of runs (AUTOMATION_RUN_STARTED / COMPLETED / EXITED). */
export interface RunEventPublisher {
  publish(kind: "started" | "completed" | "exited", run: StoredRun, at: Date): Promise<void>;
}

/** A run as the public API shows it (the webhook's `run`). */
export function runJson(run: Run): Record<string, unknown> {
  const iso = (d: Date | undefined) => (d ? new Date(d).toISOString() : undefined);
  return {
    id: run.id,
    automationId: run.automationId,
    version: run.version,
    contactId: run.contactId,
    status: run.status,
    ...(run.currentStepId ? { currentStepId: run.currentStepId } : {}),
    ...(run.nextAt ? { nextAt: iso(run.nextAt) } : {}),
    startedAt: iso(run.startedAt),
    ...(run.endedAt ? { endedAt: iso(run.endedAt) } : {}),
    ...(run.exitReason ? { exitReason: run.exitReason } : {}),
    steps: run.steps.map((s) => ({
      stepId: s.stepId,
      type: s.type,
      enteredAt: iso(s.enteredAt),
      ...(s.completedAt ? { completedAt: iso(s.completedAt) } : {}),
      ...(s.emailId ? { emailId: s.emailId } : {}),
      ...(s.branch ? { branch: s.branch } : {}),
      ...(s.detail ? { detail: s.detail } : {}),
    })),
  };
}

/** The engine's fields stripped: what list and webhooks show. */
export function publicRun(run: StoredRun): Run {
  const { email: _e, automationName: _n, waitEvent: _w, eventArrived: _a, held: _h, ...rest } = run;
  return rest;
}

/**
 * Ends a run from outside the claim loop (unsubscribe, deletion, suppression, automation
 * deleted): the exit is one compare-and-set on the run, then its counter, its entry and
 * its webhook, each after the write it follows.
 */
export class Exits {
  constructor(
    private readonly runs: RunStore,
    private readonly events: RunEventPublisher,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async exit(runId: string, reason: ExitReason): Promise<boolean> {
    const at = this.clock.now();
    const result = await this.runs.exit(runId, reason, at);
    if (!result) return false;
    const ended = result.run;
    if (result.atStep) await this.runs.bump([{ automationId: ended.automationId, version: ended.version, stepId: result.atStep, exited: 1 }]);
    await this.runs.leave(ended.automationId, ended.contactId, ended.id);
    await this.announce("exited", ended, at);
    return true;
  }

  /** Publishes a run's end and marks it announced (the sweep retries one that failed). */
  async announce(kind: "completed" | "exited", run: StoredRun, at: Date): Promise<void> {
    try {
      await this.events.publish(kind, run, at);
      await this.runs.announced([run.id]);
    } catch (err) {
      this.logger.warn({ err, runId: run.id }, "run webhook not published yet; the sweep retries it");
    }
  }
}

/** RunControl over the run store (what the catalog's pause, activate and delete call). */
export class Runs implements RunControl {
  constructor(
    private readonly runs: RunStore,
    private readonly exits: Exits,
    private readonly clock: Clock,
  ) {}

  async hold(_workspaceId: string, automationId: string): Promise<void> {
    await this.runs.hold(automationId);
  }

  async release(_workspaceId: string, automationId: string): Promise<void> {
    await this.runs.release(automationId, this.clock.now());
  }

  async exitAll(_workspaceId: string, automationId: string, reason: ExitReason): Promise<void> {
    for (;;) {
      const ids = await this.runs.activeIds(automationId, 500);
      if (!ids.length) return;
      let exited = 0;
      for (let i = 0; i < ids.length; i += 32) {
        const results = await Promise.all(ids.slice(i, i + 32).map((id) => this.exits.exit(id, reason)));
        exited += results.filter(Boolean).length;
      }
      // A page of which none could be exited would loop forever: stop (they ended meanwhile).
      if (!exited && ids.length < 500) return;
    }
  }

  counts(_workspaceId: string, automationId: string) {
    return this.runs.counts(automationId);
  }

  async list(query: RunQuery): Promise<{ runs: Run[]; nextCursor?: string }> {
    if (!query.automationId && !query.contactId) throw new Error("runs are listed by automation or by contact");
    const page = await this.runs.list(query);
    // Another workspace's runs never show, whatever ids were given.
    return { runs: page.runs.filter((r) => r.workspaceId === query.workspaceId).map(publicRun), nextCursor: page.nextCursor };
  }

  /**
   * `steps` come flattened already (the port's contract: every step, depth first). Flattening
   * them again listed each step inside a condition twice: once in the list, once under its parent.
   */
  async stats(_workspaceId: string, automationId: string, version: number, steps: readonly Step[]): Promise<StepCounts[]> {
    const [counters, waiting] = await Promise.all([
      this.runs.counters(automationId, version),
      this.runs.waiting(automationId, version, steps.map((s) => s.id)),
    ]);
    return steps.map((s) => {
      const c = counters.get(s.id);
      return { stepId: s.id, type: s.type, entered: c?.entered ?? 0, waiting: waiting.get(s.id) ?? 0, completed: c?.completed ?? 0, exited: c?.exited ?? 0 };
    });
  }
}

/**
 * Ends whose webhook did not go out (the process died between the write and the publish):
 * published again (same event id, so at most once per webhook) a while after they ended.
 */
export class AnnouncementSweep {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly runs: RunStore,
    private readonly exits: Exits,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly opts: { intervalMs?: number; graceMs?: number } = {},
  ) {}

  async sweep(): Promise<number> {
    const before = new Date(this.clock.now().getTime() - (this.opts.graceMs ?? 30_000));
    const owed = await this.runs.unannounced(before, 500);
    for (const run of owed) await this.exits.announce(run.status === "COMPLETED" ? "completed" : "exited", run, run.endedAt ?? before);
    return owed.length;
  }

  start(): void {
    const every = this.opts.intervalMs ?? 30_000;
    this.timer = setInterval(() => void this.sweep().catch((err) => this.logger.warn({ err }, "announcement sweep failed")), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
