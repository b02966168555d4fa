import type { JsonObject } from "@bufbuild/protobuf";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { renderDraftSchema, renderedTemplateSchema } from "./templates-schema.js";

const errorCodes = { template_not_found: "not_found" };

/**
 * POST /v1/templates/render { subject?, html, text?, previewText?, kind?, format?, layout?, name?, variables?, contactId? }
 * -> { subject, html, text, previewText }: unsaved content rendered as POST /v1/templates/:name/render
 * renders a saved one (the editor's live preview), checked as a save would check it. Nothing is stored.
 */
export const registerTemplateRenderDraft: RouteModule = (app, deps) => {
  defineRoute(app, {
    method: "POST",
    url: "/v1/templates/render",
    operationId: "renderTemplateDraft",
    tags: ["Templates"],
    summary: "Render unsaved template content with values or a contact's properties (a live preview: nothing is saved, sent or tracked)",
    body: renderDraftSchema,
    errorCodes,
    responses: {
      200: { description: "The rendered subject, HTML, text and preview text.", body: renderedTemplateSchema },
      400: {
        description:
          "`invalid_request`, `invalid_json`, `invalid_template` (the content does not parse, or names a layout or snippet the workspace does not have: with `field`, `line` and `column` when it has a place) or `template_render_failed`.",
        body: apiErrorSchema,
      },
      404: { description: "`not_found` (`name` given and no such template) or `contact_not_found`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { body }) => {
      const res = await deps.clients.templates.renderTemplate(
        {
          workspaceId: workspaceOf(request),
          name: body.name ?? "",
          variables: (body.variables ?? {}) as JsonObject,
          contactId: body.contactId ?? "",
          draft: {
            subject: body.subject ?? "",
            html: body.html,
            text: body.text ?? "",
            previewText: body.previewText ?? "",
            kind: body.kind ?? "",
            format: body.format ?? "",
            layout: body.layout ?? "",
          },
        },
        rpcOptions(request),
      );
      return reply.send({ subject: res.subject, html: res.html, text: res.text, previewText: res.previewText });
    },
  });
};
