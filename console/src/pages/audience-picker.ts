/**
 * The broadcast form's audience picker (DESIGN §9.4): everyone, some groups, a segment or a
 * filter; optionally without some groups, a segment or a filter; optionally only those who
 * receive a topic. It shows how many contacts that is (CountAudience: subscribed, not
 * suppressed, not opted out of the topic) before scheduling, and refreshes as it changes.
 *
 *   audienceFromForm(body)         the picker's fields → AudienceValues
 *   audienceValuesOf(audience?)    a broadcast's audience → AudienceValues (to show it)
 *   audienceRpc(values)            AudienceValues → the Audience message (the audience unit's count)
 *   audienceRequest(values)        AudienceValues → the /v1 request's `audience` (the draft form)
 *   registerAudiencePickerRoutes   GET /broadcasts/audience-count.json?<picker fields> → { count } | { error }
 *
 * The fieldset (it works without JS; the count needs it) is views/audience-picker.ts.
 */
import type { FastifyInstance } from "fastify";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { AudienceRequest } from "@mailroom/http/broadcasts-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { sessionOf } from "../session.js";
import { all, str } from "../form-values.js";

export type AudienceMode = "all" | "groups" | "segment" | "filter";

export interface AudienceValues {
  mode: AudienceMode;
  groups: string[];
  segmentId: string;
  filterJson: string;
  excludeGroups: string[];
  excludeSegmentId: string;
  excludeFilterJson: string;
  topicId: string;
}

export const EVERYONE: AudienceValues = { mode: "all", groups: [], segmentId: "", filterJson: "", excludeGroups: [], excludeSegmentId: "", excludeFilterJson: "", topicId: "" };

const MODES: AudienceMode[] = ["all", "groups", "segment", "filter"];

/** The picker's form fields (names prefixed `audience`). */
export function audienceFromForm(body: unknown): AudienceValues {
  const mode = str(body, "audience") as AudienceMode;
  return {
    mode: MODES.includes(mode) ? mode : "all",
    groups: all(body, "audienceGroups").filter(Boolean),
    segmentId: str(body, "audienceSegment"),
    filterJson: str(body, "audienceFilter").trim(),
    excludeGroups: all(body, "audienceExcludeGroups").filter(Boolean),
    excludeSegmentId: str(body, "audienceExcludeSegment"),
    excludeFilterJson: str(body, "audienceExcludeFilter").trim(),
    topicId: str(body, "audienceTopic"),
  };
}

interface AudienceLike {
  all: boolean;
  groups: string[];
  segmentId: string;
  filterJson: string;
  exclude?: { groups: string[]; segmentId: string; filterJson: string };
  topicId: string;
}

export function audienceValuesOf(a: AudienceLike | undefined): AudienceValues {
  if (!a) return EVERYONE;
  const mode: AudienceMode = a.groups.length ? "groups" : a.segmentId ? "segment" : a.filterJson ? "filter" : "all";
  return {
    mode, groups: [...a.groups], segmentId: a.segmentId, filterJson: a.filterJson,
    excludeGroups: [...(a.exclude?.groups ?? [])], excludeSegmentId: a.exclude?.segmentId ?? "", excludeFilterJson: a.exclude?.filterJson ?? "",
    topicId: a.topicId,
  };
}

/**
 * The Audience message: only the chosen mode's field (a group list left checked under
 * another mode is not sent), the exclusions and the topic. Groups with no group chosen
 * are sent as chosen (none), so the service says what is missing.
 */
export function audienceRpc(v: AudienceValues) {
  const exclude = v.excludeGroups.length || v.excludeSegmentId || v.excludeFilterJson
    ? { groups: v.excludeGroups, segmentId: v.excludeSegmentId, filterJson: v.excludeFilterJson }
    : undefined;
  return {
    all: v.mode === "all",
    groups: v.mode === "groups" ? v.groups : [],
    segmentId: v.mode === "segment" ? v.segmentId : "",
    filterJson: v.mode === "filter" ? v.filterJson || "{}" : "",
    ...(exclude ? { exclude } : {}),
    topicId: v.topicId,
  };
}

/**
 * The /v1 request's audience (what the route schema checks): only the chosen mode's field, the
 * exclusions and the topic. Filters are JSON text in the form: text that is not JSON goes on as
 * text, for the schema to refuse.
 */
export function audienceRequest(v: AudienceValues): AudienceRequest {
  const exclude = {
    ...(v.excludeGroups.length ? { groups: v.excludeGroups } : {}),
    ...(v.excludeSegmentId ? { segmentId: v.excludeSegmentId } : {}),
    ...(v.excludeFilterJson ? { filter: filterOf(v.excludeFilterJson) } : {}),
  };
  const chosen = v.mode === "groups" ? { groups: v.groups } : v.mode === "segment" ? { segmentId: v.segmentId } : v.mode === "filter" ? { filter: filterOf(v.filterJson || "{}") } : { all: true as const };
  return { ...chosen, ...(Object.keys(exclude).length ? { exclude } : {}), ...(v.topicId ? { topicId: v.topicId } : {}) } as AudienceRequest;
}

function filterOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function registerAudiencePickerRoutes(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/broadcasts/audience-count.json", async (request, reply) => {
    const session = sessionOf(request);
    const audience = audienceRpc(audienceFromForm(request.query));
    try {
      const res = await deps.clients.audiences.countAudience({ workspaceId: session.workspaceId, audience }, rpcOptions(request));
      return reply.send({ count: Number(res.count) });
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return reply.code(e.statusCode).send({ error: { code: e.code, message: e.message } });
    }
  });
}
