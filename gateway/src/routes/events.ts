import { z } from "zod";
import type { JsonObject } from "@bufbuild/protobuf";
import type { FastifyRequest } from "fastify";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { jsonObject } from "../schemas/email.js";

/**
 * Events about contacts (the official client's `events.send` / `sendBatch`): stored once per
 * messageId per workspace (the audience unit's contact_events), the traits written onto the
 * contact (created when missing), and published on MAIL_EVENTS as mail.events.contact.<name>.
 * Each item's rules (name, address, timestamp) live in the audience unit.
 */

const BATCH_MAX = 100;

const eventSchema = z
  .looseObject({
    event: z.string().min(1).max(200).meta({ description: "Letters, digits, `_`, `-`, `:` and `.` between parts, e.g. `user.signup` (else 400 `invalid_event`)." }),
    identify: z.looseObject({
      email: z.string().min(1, "identify.email is required").max(512),
      traits: jsonObject.optional().meta({ description: "Written onto the contact like `POST /v1/contacts` properties; unknown custom ones are created." }),
    }),
    properties: jsonObject.optional().meta({ description: "Free event data (at most 32 KB)." }),
    timestamp: z.union([z.string(), z.number()]).optional().meta({ description: "ISO 8601, or Unix time in seconds (milliseconds above 1e11); default now." }),
    messageId: z.string().max(200).optional().meta({ description: "Deduplication key per workspace; generated when absent." }),
  })
  .meta({ id: "ContactEventInput" });

const itemError = z.strictObject({ code: z.string(), message: z.string() });

async function record(request: FastifyRequest, deps: Parameters<RouteModule>[1], events: Array<z.infer<typeof eventSchema>>) {
  const res = await deps.clients.contacts.recordContactEvents(
    {
      workspaceId: workspaceOf(request),
      events: events.map((e) => ({
        name: e.event,
        email: e.identify.email,
        traits: (e.identify.traits ?? {}) as JsonObject,
        properties: (e.properties ?? {}) as JsonObject,
        timestamp: e.timestamp === undefined ? "" : String(e.timestamp),
        messageId: e.messageId ?? "",
      })),
    },
    rpcOptions(request),
  );
  return res.results;
}

/**
 * POST /v1/events -> { success: true, messageId } (a failing event is its 400)
 * POST /v1/events/batch -> { accepted, failed, duplicated, events, errors }
 */
export const registerEvents: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/events",
    operationId: "sendEvent",
    tags: ["Events"],
    summary: "Record one event about a contact",
    body: eventSchema,
    responses: {
      200: {
        description: "Recorded, or already recorded under this messageId (then `info` says so).",
        body: z.strictObject({ success: z.literal(true), messageId: z.string(), info: z.string().optional() }).meta({ id: "EventAccepted" }),
      },
      400: { description: "`invalid_request`, `invalid_json`, `invalid_event`, `invalid_email`, `invalid_property_value`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const [result] = await record(request, deps, [body]);
      if (result.status === "failed") throw refusal({ code: result.error?.code ?? "invalid_event", message: result.error?.message ?? "invalid event", status: result.error?.httpStatus || 400 });
      return reply.send({ success: true, messageId: result.messageId, ...(result.status === "duplicate" ? { info: "duplicate: this messageId was already recorded" } : {}) });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/events/batch",
    operationId: "sendEventBatch",
    tags: ["Events"],
    summary: "Record up to 100 events; each succeeds or fails on its own",
    body: z.strictObject({ events: z.array(z.unknown()).min(1, "events must hold at least one event").max(BATCH_MAX) }).meta({ id: "EventBatchRequest" }),
    responses: {
      200: {
        description: "Per event: `accepted` or `duplicate` (in `events`), or its errors (in `errors`).",
        body: z
          .strictObject({
            accepted: z.number().int(),
            failed: z.number().int(),
            duplicated: z.number().int(),
            events: z.array(z.strictObject({ index: z.number().int(), messageId: z.string(), status: z.enum(["accepted", "duplicate"]) })),
            errors: z.array(z.strictObject({ index: z.number().int(), errors: z.array(itemError) })),
          })
          .meta({ id: "EventBatchResult" }),
      },
      400: { description: "`invalid_request` (no events, over 100), `invalid_json`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      // Each item is checked on its own: a malformed one fails alone.
      const parsed = body.events.map((e) => eventSchema.safeParse(e));
      const valid = parsed.flatMap((p, index) => (p.success ? [{ index, event: p.data }] : []));
      const results = valid.length ? await record(request, deps, valid.map((v) => v.event)) : [];
      const events: Array<{ index: number; messageId: string; status: "accepted" | "duplicate" }> = [];
      const errors: Array<{ index: number; errors: Array<{ code: string; message: string }> }> = [];
      parsed.forEach((p, index) => {
        if (p.success) return;
        const issue = p.error.issues[0];
        errors.push({ index, errors: [{ code: "invalid_event", message: `${issue?.path.join(".") || "event"}: ${issue?.message ?? "invalid"}` }] });
      });
      results.forEach((r, i) => {
        const index = valid[i].index;
        if (r.status === "failed") errors.push({ index, errors: [{ code: r.error?.code ?? "invalid_event", message: r.error?.message ?? "invalid event" }] });
        else events.push({ index, messageId: r.messageId, status: r.status as "accepted" | "duplicate" });
      });
      errors.sort((a, b) => a.index - b.index);
      return reply.send({
        accepted: events.filter((e) => e.status === "accepted").length,
        failed: errors.length,
        duplicated: events.filter((e) => e.status === "duplicate").length,
        events,
        errors,
      });
    },
  });
};
