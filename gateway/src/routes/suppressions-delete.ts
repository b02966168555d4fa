import { z } from "zod";
import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES } from "../openapi.js";
import { invalid } from "@mailroom/http/errors.js";
import { defineRoute, type RouteModule } from "./route.js";
import { suppressionJson, suppressionSchema } from "@mailroom/http/suppressions-schema.js";

const params = z.strictObject({
  emailOrDomain: z.string().min(1).max(512).meta({ description: "The address, or the domain (`example.org` or `@example.org`), URL-encoded.", examples: ["ann@example.com", "example.org"] }),
});
const query = z.strictObject({
  force: z.enum(["true", "false"]).optional().meta({ description: "`true` to lift a `complaint` suppression (also accepted in the body)." }),
});
const bodySchema = z.strictObject({ force: z.boolean().optional() }).meta({ id: "DeleteSuppression" });

/** `ann@x.test` is an address; `x.test` and `@x.test` name a whole domain. */
export function targetOf(value: string): { email: string; domain: string } {
  const v = value.trim();
  return v.indexOf("@") > 0 ? { email: v, domain: "" } : { email: "", domain: v.replace(/^@/, "") };
}

/** DELETE /v1/suppressions/:emailOrDomain (force for a complaint) -> { suppression, isDeleted: true }. */
export const registerDeleteSuppression: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "DELETE",
    url: "/v1/suppressions/:emailOrDomain",
    operationId: "deleteSuppression",
    tags: ["Suppressions"],
    summary: "Lift an address's or a domain's suppression",
    description: "Mail flows to the address (or domain) again. An address erased at its contact's request loses its hashed suppression too. A `complaint` (the recipient reported spam) is lifted only with `force=true` (query or JSON body `{ \"force\": true }`); without it the answer is 409 `force_required` and nothing changes. Lifting an address does not lift its domain's suppression, nor the other way round.",
    params,
    query,
    requestContent: { required: false, content: { "application/json": bodySchema } },
    // Optional: without a body (or with an empty object) the query decides.
    parseBody: (raw) => {
      if (raw === undefined || raw === null || raw === "") return {};
      const parsed = bodySchema.safeParse(raw);
      if (!parsed.success) throw refusal(invalid(parsed.error));
      return parsed.data;
    },
    responses: {
      200: { description: "Lifted; the suppression as it was.", body: z.strictObject({ suppression: suppressionSchema, isDeleted: z.literal(true) }).meta({ id: "SuppressionDeleted" }) },
      400: { description: "`invalid_email` or `invalid_domain`.", body: apiErrorSchema },
      404: { description: "`suppression_not_found`: the address or domain is not suppressed.", body: apiErrorSchema },
      409: { description: "`force_required`: suppressed for a spam complaint; send `force=true` to lift it.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
    },
    handler: async (request, reply, input) => {
      const force = input.query.force === "true" || input.body.force === true;
      const res = await deps.clients.contacts.removeSuppression(
        { workspaceId: workspaceOf(request), ...targetOf(input.params.emailOrDomain), force, requireFound: true },
        rpcOptions(request),
      );
      return reply.send({ suppression: suppressionJson(res.removed!), isDeleted: true });
    },
  });
