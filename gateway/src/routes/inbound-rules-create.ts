import { rpcOptions } from "@mailroom/http/deps.js";
import { workspaceOf } from "../auth.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { API_KEY_RESPONSES, JSON_BODY_RESPONSES } from "../openapi.js";
import { defineRoute, type RouteModule } from "./route.js";
import { checkDomainId, createInboundRuleSchema, domainIdParams, domainNotFound, inboundRuleEnvelope, inboundRuleJson } from "@mailroom/http/inbound-schema.js";

/** POST /v1/inbound/domains/:id/rules { match, action, forwardTo? } -> 201 { rule } */
export const registerCreateInboundRule: RouteModule = (app, deps) =>
  defineRoute(app, {
    method: "POST",
    url: "/v1/inbound/domains/:id/rules",
    operationId: "createInboundRule",
    tags: ["Receiving"],
    summary: "Add a rule: which addresses of the domain are taken, and what happens to their mail",
    description: "`match` picks recipients of the domain: `*` any, `support` one local part, `reply+*` plus-addresses (`reply+<tag>@…`, the tag given as the received email's `mailboxHash`). A recipient no rule matches is refused at `RCPT TO` (550).",
    params: domainIdParams,
    body: createInboundRuleSchema,
    responses: {
      201: { description: "Added.", body: inboundRuleEnvelope },
      400: { description: "`invalid_request` or `invalid_json`: a `match` that is not `*`, a local part or `local+*`; an unknown `action`; `forwardTo` missing for `forward`, not an address, or given with another action (the message names the field); `invalid_inbound_rule`: a `forwardTo` at an inbound domain of this server (a loop), or the domain's 100 rules reached.", body: apiErrorSchema },
      404: domainNotFound,
      409: { description: "`inbound_rule_exists`: the domain has a rule with this `match`.", body: apiErrorSchema },
      ...API_KEY_RESPONSES,
      ...JSON_BODY_RESPONSES,
    },
    handler: async (request, reply, { params, body }) => {
      checkDomainId(params.id);
      const res = await deps.clients.receiving.createInboundRule(
        { workspaceId: workspaceOf(request), domainId: params.id, match: body.match, action: body.action, forwardTo: body.forwardTo },
        rpcOptions(request),
      );
      return reply.code(201).send({ rule: inboundRuleJson(res.rule!) });
    },
  });
