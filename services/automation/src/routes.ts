import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  AutomationSchema,
  AutomationService,
  AutomationStatus as PbAutomationStatus,
  RunSchema,
  RunStatus as PbRunStatus,
  type Automation as PbAutomation,
  type Run as PbRun,
} from "@mailroom/proto/automation/v1/automation_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { invalidAutomation, type Automations, type AutomationView } from "./domain/automations.js";
import type { AutomationStatus, Run, RunStatus } from "./domain/model.js";

const STATUS_TO_PB: Record<AutomationStatus, PbAutomationStatus> = {
  DRAFT: PbAutomationStatus.DRAFT,
  ACTIVE: PbAutomationStatus.ACTIVE,
  PAUSED: PbAutomationStatus.PAUSED,
};
const RUN_STATUS_TO_PB: Record<RunStatus, PbRunStatus> = {
  ACTIVE: PbRunStatus.ACTIVE,
  COMPLETED: PbRunStatus.COMPLETED,
  EXITED: PbRunStatus.EXITED,
};
const RUN_STATUS_OF_PB = new Map<number, RunStatus>(Object.entries(RUN_STATUS_TO_PB).map(([name, pb]) => [pb, name as RunStatus]));

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

/** Domain automation (with its run counts) -> proto; the definition as the public JSON text. */
export function protoAutomation(a: AutomationView): PbAutomation {
  return create(AutomationSchema, {
    id: a.id,
    workspaceId: a.workspaceId,
    name: a.name,
    status: STATUS_TO_PB[a.status],
    triggerJson: JSON.stringify(a.trigger),
    stepsJson: JSON.stringify(a.steps),
    reentryJson: JSON.stringify(a.reentry),
    version: a.version,
    createdAt: ts(a.createdAt),
    updatedAt: ts(a.updatedAt),
    runs: { active: BigInt(a.runs.active), completed: BigInt(a.runs.completed), exited: BigInt(a.runs.exited) },
  });
}

/** Domain run -> proto (every step done or started, in order). */
export function protoRun(r: Run): PbRun {
  return create(RunSchema, {
    id: r.id,
    workspaceId: r.workspaceId,
    automationId: r.automationId,
    version: r.version,
    contactId: r.contactId,
    status: RUN_STATUS_TO_PB[r.status],
    currentStepId: r.currentStepId ?? "",
    nextAt: ts(r.nextAt),
    startedAt: ts(r.startedAt),
    endedAt: ts(r.endedAt),
    exitReason: r.exitReason ?? "",
    steps: r.steps.map((s) => ({
      stepId: s.stepId,
      type: s.type,
      enteredAt: ts(s.enteredAt),
      completedAt: ts(s.completedAt),
      emailId: s.emailId ?? "",
      branch: s.branch ?? "",
      detail: s.detail ?? "",
    })),
  });
}

/** One definition field's JSON text; empty is "not given". */
function parsedJson(text: string | undefined, field: string): unknown {
  if (text === undefined || text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidAutomation(field, "is not valid JSON");
  }
}

function runStatusOf(value: number): RunStatus | undefined {
  if (value === 0) return undefined;
  const status = RUN_STATUS_OF_PB.get(value);
  if (!status) throw badRequest("invalid_request", `status has an unknown value ${value}`);
  return status;
}

/** The Connect AutomationService: proto in, proto out, no business rules. */
export function automationRoutes(automations: Automations) {
  return (router: ConnectRouter) =>
    router.service(AutomationService, {
      async createAutomation(req) {
        const automation = await automations.create(req.workspaceId, {
          name: req.name,
          trigger: parsedJson(req.triggerJson, "trigger"),
          steps: parsedJson(req.stepsJson, "steps"),
          reentry: parsedJson(req.reentryJson, "reentry"),
        });
        return { automation: protoAutomation(automation) };
      },

      async getAutomation(req) {
        return { automation: protoAutomation(await automations.get(req.workspaceId, req.automationId)) };
      },

      async listAutomations(req) {
        const page = await automations.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
        return { automations: page.items.map(protoAutomation), page: { nextCursor: page.cursor, hasMore: page.hasMore } };
      },

      async updateAutomation(req) {
        const automation = await automations.update(req.workspaceId, req.automationId, {
          name: req.name,
          // A field present but empty is as good as absent: nothing to replace it with.
          trigger: parsedJson(req.triggerJson, "trigger"),
          steps: parsedJson(req.stepsJson, "steps"),
          reentry: parsedJson(req.reentryJson, "reentry"),
        });
        return { automation: protoAutomation(automation) };
      },

      async deleteAutomation(req) {
        return { automation: protoAutomation(await automations.delete(req.workspaceId, req.automationId)) };
      },

      async activateAutomation(req) {
        return { automation: protoAutomation(await automations.activate(req.workspaceId, req.automationId)) };
      },

      async pauseAutomation(req) {
        return { automation: protoAutomation(await automations.pause(req.workspaceId, req.automationId)) };
      },

      async listRuns(req) {
        const page = await automations.runs(req.workspaceId, {
          automationId: req.automationId,
          contactId: req.contactId,
          status: runStatusOf(req.status),
          limit: req.page?.limit,
          cursor: req.page?.cursor,
        });
        return { runs: page.runs.map(protoRun), page: { nextCursor: page.nextCursor ?? "", hasMore: page.nextCursor !== undefined && page.nextCursor !== "" } };
      },

      async getAutomationStats(req) {
        const stats = await automations.stats(req.workspaceId, req.automationId, req.version);
        return {
          automationId: stats.automationId,
          version: stats.version,
          steps: stats.steps.map((s) => ({
            stepId: s.stepId,
            type: s.type,
            entered: BigInt(s.entered),
            waiting: BigInt(s.waiting),
            completed: BigInt(s.completed),
            exited: BigInt(s.exited),
          })),
        };
      },
    });
}
