import { z } from "zod";
import {
  AutomationStatus,
  RunStatus,
  type Automation,
  type Run,
  type StepStats,
} from "@mailroom/proto/automation/v1/automation_pb.js";
import { apiErrorSchema } from "./errors.js";
import { iso } from "./contacts-schema.js";

/**
 * Automations (DESIGN §9.6), shared by the automations-*.ts routes. The gateway checks only
 * that a definition's parts are there with the right JSON type; the automation unit parses and
 * validates them (one validator, naming the JSON path of any fault) and they travel as JSON text.
 */

export const AUTOMATIONS_DEFAULT_LIMIT = 20;
export const AUTOMATION_STATUSES = ["DRAFT", "ACTIVE", "PAUSED"] as const;
export const RUN_STATUSES = ["ACTIVE", "COMPLETED", "EXITED"] as const;

const STATUS_NAME: Record<number, (typeof AUTOMATION_STATUSES)[number]> = {
  [AutomationStatus.DRAFT]: "DRAFT",
  [AutomationStatus.ACTIVE]: "ACTIVE",
  [AutomationStatus.PAUSED]: "PAUSED",
};
const RUN_STATUS_NAME: Record<number, (typeof RUN_STATUSES)[number]> = {
  [RunStatus.ACTIVE]: "ACTIVE",
  [RunStatus.COMPLETED]: "COMPLETED",
  [RunStatus.EXITED]: "EXITED",
};
const RUN_STATUS_BY_NAME: Record<(typeof RUN_STATUSES)[number], RunStatus> = { ACTIVE: RunStatus.ACTIVE, COMPLETED: RunStatus.COMPLETED, EXITED: RunStatus.EXITED };
export const runStatusOf = (name: (typeof RUN_STATUSES)[number] | undefined) => (name ? RUN_STATUS_BY_NAME[name] : RunStatus.UNSPECIFIED);

// --- the definition ----------------------------------------------------------------------

const triggerSchema = z.record(z.string(), z.unknown()).meta({
  description: "What enrols a contact, one of: `{ type: \"contact_created\" }`, `{ type: \"event\", name }` (a `POST /v1/events` name), `{ type: \"group_joined\", groupId }` (id or publicId; stored as the id), `{ type: \"property_changed\", property }` (an API slug or `firstName`/`lastName`), `{ type: \"email_opened\" | \"email_clicked\", broadcastId?, template? }`; each with an optional `filter` (§9.4) the contact must match when it enters. Only SUBSCRIBED contacts enter.",
  examples: [{ type: "event", name: "signed_up" }, { type: "contact_created", filter: { "properties.plan": "pro" } }],
});

const stepsSchema = z.array(z.record(z.string(), z.unknown())).meta({
  description: "Steps in order, each `{ id, type, … }` with an `id` unique in the whole automation (letters, digits, `_`, `-`, at most 64): `wait { duration }` (ISO 8601, 1 s to 366 days) · `wait_until { time: \"HH:MM\", days?: [\"mon\"…\"sun\"], timezone?: \"contact\"|\"workspace\" }` · `send { template, settings?: { trackOpens?, trackClicks? } }` (a stored template by name) · `condition { filter, then: [steps], else?: [steps] }` · `wait_for_event { event, timeout, then: [steps], else?: [steps] }` (a custom event, or `email_opened`/`email_clicked`/`email_replied` of an email this run sent) · `update_contact { properties }` · `add_to_group { groupId }` · `remove_from_group { groupId }` · `exit`. A branch given is non-empty; branches rejoin after their step.",
  examples: [[
    { id: "hello", type: "send", template: "welcome" },
    { id: "later", type: "wait", duration: "P2D" },
    { id: "pro", type: "condition", filter: { "properties.plan": "pro" }, then: [{ id: "tips", type: "send", template: "pro-tips" }], else: [{ id: "upgrade", type: "send", template: "upgrade" }] },
  ]],
});

const reentrySchema = z.union([z.string(), z.record(z.string(), z.unknown())]).meta({
  description: "Who may enter again: `\"once\"` (the default: at most once), `\"always\"` (whenever it has no active run here), `{ \"after\": \"P30D\" }` (once no run is active and its last entry is that old).",
  examples: ["once", { after: "P30D" }],
});

export const createAutomationSchema = z
  .strictObject({
    name: z.string().min(1).max(200).meta({ description: "At most 200 characters, one line." }),
    trigger: triggerSchema,
    steps: stepsSchema,
    reentry: reentrySchema.optional(),
  })
  .meta({ id: "CreateAutomationRequest" });

export const updateAutomationSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    trigger: triggerSchema.optional(),
    steps: stepsSchema.optional(),
    reentry: reentrySchema.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: "give at least one of name, trigger, steps, reentry" })
  .meta({ id: "UpdateAutomationRequest" });

// --- responses -----------------------------------------------------------------------------

const runCountsSchema = z.strictObject({
  active: z.number().int(),
  completed: z.number().int(),
  exited: z.number().int(),
});

export const automationSchema = z
  .strictObject({
    id: z.string().meta({ description: "`aut_…`", examples: ["aut_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
    name: z.string(),
    status: z.enum(AUTOMATION_STATUSES).meta({ description: "DRAFT (new), ACTIVE (contacts enter, runs advance), PAUSED (nobody enters, runs hold where they are)." }),
    trigger: z.record(z.string(), z.unknown()),
    steps: z.array(z.record(z.string(), z.unknown())),
    reentry: z.union([z.string(), z.record(z.string(), z.unknown())]),
    version: z.number().int().min(1).meta({ description: "1 at creation, one more at every update; a run stays on the version it started on." }),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    runs: runCountsSchema.meta({ description: "Runs of every version, by status." }),
  })
  .meta({ id: "Automation" });

export const automationEnvelope = z.strictObject({ automation: automationSchema }).meta({ id: "AutomationResponse" });

export const automationListSchema = z
  .strictObject({
    automations: z.strictObject({
      items: z.array(automationSchema).meta({ description: "Newest first." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "AutomationList" });

const runStepSchema = z.strictObject({
  stepId: z.string(),
  type: z.string(),
  enteredAt: z.iso.datetime(),
  completedAt: z.iso.datetime().optional().meta({ description: "Absent while the run is in this step." }),
  emailId: z.string().optional().meta({ description: "send: the email sent." }),
  branch: z.enum(["then", "else"]).optional().meta({ description: "condition and wait_for_event: the branch taken." }),
  detail: z.string().optional().meta({ description: "send: why nothing went out (`suppressed`, …), when it did not." }),
});

export const runSchema = z
  .strictObject({
    id: z.string().meta({ description: "`run_…`" }),
    automationId: z.string(),
    version: z.number().int(),
    contactId: z.string(),
    status: z.enum(RUN_STATUSES),
    currentStepId: z.string().optional().meta({ description: "The step the run is at (waiting in, or about to do); absent once ended." }),
    nextAt: z.iso.datetime().optional().meta({ description: "When the run is due next (the end of its wait, its wait_for_event's timeout)." }),
    startedAt: z.iso.datetime(),
    endedAt: z.iso.datetime().optional(),
    exitReason: z.string().optional().meta({ description: "EXITED: `unsubscribed`, `deleted`, `suppressed`, `exit_step`, `automation_deleted`, `send_failed` or `contact_not_found`." }),
    steps: z.array(runStepSchema).meta({ description: "Each step done or started, in order." }),
  })
  .meta({ id: "AutomationRun" });

export const runListSchema = z
  .strictObject({
    runs: z.strictObject({
      items: z.array(runSchema).meta({ description: "Newest first." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "AutomationRunList" });

export const statsSchema = z
  .strictObject({
    stats: z.strictObject({
      automationId: z.string(),
      version: z.number().int(),
      steps: z
        .array(
          z.strictObject({
            stepId: z.string(),
            type: z.string(),
            entered: z.number().int().meta({ description: "Runs that reached the step." }),
            waiting: z.number().int().meta({ description: "Runs in it now." }),
            completed: z.number().int().meta({ description: "Runs that went past it." }),
            exited: z.number().int().meta({ description: "Runs that left the automation there." }),
          }),
        )
        .meta({ description: "Every step of the version, depth first (a condition, its `then` steps, then its `else` steps)." }),
    }),
  })
  .meta({ id: "AutomationStats" });

// --- parameters and documented refusals -------------------------------------------------------

export const automationIdParams = z.object({
  id: z.string().min(1).max(100).meta({ description: "The automation's id (`aut_…`)." }),
});

export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: AUTOMATIONS_DEFAULT_LIMIT }),
  cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
});

export const automationNotFound = { description: "`automation_not_found` (also a deleted one, or another workspace's).", body: apiErrorSchema };
export const invalidAutomation = {
  description: "`invalid_request` (a part missing or of the wrong JSON type), `invalid_json`, or `invalid_automation`: the message starts with the JSON path of the fault (`steps[1].then[0].template: template \"x\" does not exist`), which `path` repeats.",
  body: apiErrorSchema,
};
export const automationState = { description: "`automation_state`: not allowed in the automation's status (the message names it), or another update made a new version first.", body: apiErrorSchema };

// --- proto -> JSON ------------------------------------------------------------------------------

const parsed = (text: string, fallback: unknown): unknown => {
  try {
    return text ? (JSON.parse(text) as unknown) : fallback;
  } catch {
    return fallback;
  }
};

const isoOf = (t: Parameters<typeof iso>[0]) => iso(t) ?? new Date(0).toISOString();
const isoOrNone = (t: Parameters<typeof iso>[0]) => iso(t) ?? undefined;
/** Only fields that are set (empty strings and absent timestamps are left out). */
const present = <T extends Record<string, string | undefined>>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== "" && v !== undefined)) as Partial<T>;

export function automationJson(a: Automation): z.output<typeof automationSchema> {
  return {
    id: a.id,
    name: a.name,
    status: STATUS_NAME[a.status] ?? "DRAFT",
    trigger: parsed(a.triggerJson, {}) as Record<string, unknown>,
    steps: parsed(a.stepsJson, []) as Array<Record<string, unknown>>,
    reentry: parsed(a.reentryJson, "once") as string | Record<string, unknown>,
    version: a.version,
    createdAt: isoOf(a.createdAt),
    updatedAt: iso(a.updatedAt) ?? isoOf(a.createdAt),
    runs: { active: Number(a.runs?.active ?? 0n), completed: Number(a.runs?.completed ?? 0n), exited: Number(a.runs?.exited ?? 0n) },
  };
}

export function runJson(r: Run): z.output<typeof runSchema> {
  return {
    id: r.id,
    automationId: r.automationId,
    version: r.version,
    contactId: r.contactId,
    status: RUN_STATUS_NAME[r.status] ?? "ACTIVE",
    ...present({ currentStepId: r.currentStepId, nextAt: isoOrNone(r.nextAt) }),
    startedAt: isoOf(r.startedAt),
    ...present({ endedAt: isoOrNone(r.endedAt), exitReason: r.exitReason }),
    steps: r.steps.map((s) => ({
      stepId: s.stepId,
      type: s.type,
      enteredAt: isoOf(s.enteredAt),
      ...present({ completedAt: isoOrNone(s.completedAt), emailId: s.emailId, detail: s.detail }),
      ...(s.branch === "then" || s.branch === "else" ? { branch: s.branch } : {}),
    })),
  };
}

export function stepStatsJson(s: StepStats) {
  return { stepId: s.stepId, type: s.type, entered: Number(s.entered), waiting: Number(s.waiting), completed: Number(s.completed), exited: Number(s.exited) };
}

/** A page of runs as the API shows it. */
export function runPage(res: { runs: Run[]; page?: { nextCursor: string; hasMore: boolean } }) {
  const hasMore = res.page?.hasMore ?? false;
  return { runs: { items: res.runs.map(runJson), cursor: hasMore ? res.page!.nextCursor : null, hasMore } };
}
