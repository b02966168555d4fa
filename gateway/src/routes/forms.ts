import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, invalidFromErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { z } from "zod";
import { defineRoute, type RouteModule } from "./route.js";
import { createFormSchema, formInput, formJson, formListSchema, formResponseSchema, listFormsQuerySchema } from "@mailroom/http/forms-schema.js";

/**
 * GET /v1/forms?limit=&cursor= -> { forms: { items, cursor, hasMore } } (oldest first)
 * POST /v1/forms -> 201 { form } (DESIGN §9.4: signup forms with double opt-in)
 */
export const registerForms: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "GET",
    url: "/v1/forms",
    operationId: "listForms",
    tags: ["Forms"],
    summary: "List signup forms, oldest first, cursor-paginated",
    query: listFormsQuerySchema,
    responses: {
      200: { description: "One page.", body: formListSchema },
      400: { description: "`invalid_request` or `invalid_cursor`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, { query }) => {
      const res = await deps.clients.forms.listForms(
        { workspaceId: workspaceOf(request), page: { limit: query.limit ?? 20, cursor: query.cursor ?? "" } },
        rpcOptions(request),
      );
      const hasMore = res.page?.hasMore ?? false;
      return reply.send({ forms: { items: res.forms.map((f) => formJson(f, deps.config.publicUrl)), cursor: hasMore ? res.page!.nextCursor : null, hasMore } });
    },
  });

  defineRoute(app, {
    method: "POST",
    url: "/v1/forms",
    operationId: "createForm",
    tags: ["Forms"],
    summary: "Create a signup form",
    description: "The hosted page is served at the answer's `url` (`GET /f/{id}`); `POST /f/{id}` takes signups from any page (form or JSON, CORS open).",
    body: createFormSchema,
    responses: {
      201: { description: "Created.", body: formResponseSchema },
      400: {
        description: "`invalid_request`, `invalid_json`, `invalid_form` (an unknown field, group or topic, a bad `redirectUrl`), `template_not_found` (`confirmTemplate`), `invalid_from` (`fromEmail` not verified, or a double opt-in form without any sender).",
        body: z.union([invalidFromErrorSchema, apiErrorSchema]),
      },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.forms.createForm({ workspaceId: workspaceOf(request), form: formInput(body).form }, rpcOptions(request));
      return reply.code(201).send({ form: formJson(res.form!, deps.config.publicUrl) });
    },
  });
};
