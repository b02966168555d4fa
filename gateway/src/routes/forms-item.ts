import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, invalidFromErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { formDeletedSchema, formIdParams, formInput, formJson, formResponseSchema, updateFormSchema } from "@mailroom/http/forms-schema.js";

/**
 * GET /v1/forms/:id -> { form }
 * PATCH /v1/forms/:id -> { form } (only the fields given; null clears an optional one)
 * DELETE /v1/forms/:id -> { form, isDeleted: true }
 */
export const registerFormItem: RouteModule = (app, deps) => {
  const notFound = { 404: { description: "`form_not_found` (also for another workspace's form).", body: apiErrorSchema } };

  defineRoute(app, {
    method: "GET",
    url: "/v1/forms/:id",
    operationId: "getForm",
    tags: ["Forms"],
    summary: "Read a signup form",
    params: formIdParams,
    responses: { 200: { description: "The form.", body: formResponseSchema }, ...notFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.forms.getForm({ workspaceId: workspaceOf(request), id: params.id }, rpcOptions(request));
      return reply.send({ form: formJson(res.form!, deps.config.publicUrl) });
    },
  });

  defineRoute(app, {
    method: "PATCH",
    url: "/v1/forms/:id",
    operationId: "updateForm",
    tags: ["Forms"],
    summary: "Change a signup form",
    params: formIdParams,
    body: updateFormSchema,
    responses: {
      200: { description: "The form.", body: formResponseSchema },
      400: {
        description: "`invalid_request`, `invalid_json`, `invalid_form`, `template_not_found`, `invalid_from` (as on create).",
        body: z.union([invalidFromErrorSchema, apiErrorSchema]),
      },
      ...notFound,
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      const { form, updateFields } = formInput(body);
      const res = await deps.clients.forms.updateForm({ workspaceId: workspaceOf(request), id: params.id, form, updateFields }, rpcOptions(request));
      return reply.send({ form: formJson(res.form!, deps.config.publicUrl) });
    },
  });

  defineRoute(app, {
    method: "DELETE",
    url: "/v1/forms/:id",
    operationId: "deleteForm",
    tags: ["Forms"],
    summary: "Delete a signup form",
    description: "Its hosted page and endpoint answer 404 from then on; confirmation links already sent still subscribe (without the form's groups and topics).",
    params: formIdParams,
    responses: { 200: { description: "Deleted: the form as it was.", body: formDeletedSchema }, ...notFound, ...API_KEY_RESPONSES },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.forms.deleteForm({ workspaceId: workspaceOf(request), id: params.id }, rpcOptions(request));
      return reply.send({ form: formJson(res.form!, deps.config.publicUrl), isDeleted: true });
    },
  });
};
