/**
 * Inbound: the domains the workspace receives mail for (DESIGN §10.4), each with the MX record
 * to publish, its status and a re-check that runs the inbound unit's real MX lookup; per
 * domain its rules (which addresses are taken, and whether their mail becomes a webhook, is
 * forwarded or only kept), with forms to add and delete them. The requests are checked with
 * the API's own schemas (@mailroom/http/inbound-schema.js), so a refusal reads the same in
 * both. The markup is views/inbound.ts.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { invalid, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { INBOUND_DOMAIN_ID, INBOUND_RULE_ID, createInboundDomainSchema, createInboundRuleSchema } from "@mailroom/http/inbound-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { CONSOLE_PREFIX, consolePage } from "../layout.js";
import { mayPost, sessionOf, setFlash } from "../session.js";
import { render } from "../views/html.js";
import { inboundDomainView, inboundListView } from "../views/inbound.js";
import { formAction, requireEdit } from "./form-action.js";

/** The same 404 for an id that cannot exist and for another workspace's domain. */
function domainIdOf(request: FastifyRequest): string {
  const id = String((request.params as { id?: string }).id ?? "");
  if (!INBOUND_DOMAIN_ID.test(id)) throw refusal({ code: "not_found", message: "There is no such inbound domain in this workspace." });
  return id;
}

function form(request: FastifyRequest): Record<string, string> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, typeof v === "string" ? v : ""]));
}

export function registerInboundPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/inbound", async (request, reply) => {
    const session = sessionOf(request);
    const { domains } = await deps.clients.receiving.listInboundDomains({ workspaceId: session.workspaceId }, rpcOptions(request));
    const body = inboundListView(domains, mayPost(session, "/console/inbound") ? csrfField(session) : undefined);
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Inbound", session, active: "inbound", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/inbound", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    return formAction(reply, `${CONSOLE_PREFIX}/inbound`, async () => {
      const parsed = createInboundDomainSchema.safeParse({ domain: form(request).domain ?? "" });
      if (!parsed.success) throw refusal(invalid(parsed.error));
      const { domain } = await deps.clients.receiving.createInboundDomain({ workspaceId: session.workspaceId, domain: parsed.data.domain }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${domain?.domain ?? parsed.data.domain} added. Publish its MX record, re-check, then add a rule.` });
      return domain ? `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(domain.id)}` : `${CONSOLE_PREFIX}/inbound`;
    });
  });

  scope.get("/inbound/:id", async (request, reply) => {
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const { domain: d } = await deps.clients.receiving.getInboundDomain({ workspaceId: session.workspaceId, id }, rpcOptions(request));
    if (!d) throw refusal({ code: "not_found", message: "There is no such inbound domain in this workspace." });
    const { rules } = await deps.clients.receiving.listInboundRules({ workspaceId: session.workspaceId, domainId: id }, rpcOptions(request));
    const csrfIf = (route: string) => (mayPost(session, route) ? csrfField(session) : undefined);
    const body = inboundDomainView(d, rules, {
      verify: csrfIf("/console/inbound/:id/verify"),
      remove: csrfIf("/console/inbound/:id/delete"),
      addRule: csrfIf("/console/inbound/:id/rules"),
      deleteRule: csrfIf("/console/inbound/:id/rules/:ruleId/delete"),
    });
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: d.domain, session, active: "inbound", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/inbound/:id/verify", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      const { domain: d } = await deps.clients.receiving.verifyInboundDomain({ workspaceId: session.workspaceId, id }, { ...rpcOptions(request), timeoutMs: 20_000 });
      setFlash(reply, d?.status === "verified"
        ? { kind: "ok", message: `${d.domain} is verified: its mail is taken as its rules say.` }
        : { kind: "error", message: `${d?.domain ?? "The domain"} is not verified yet${d?.failure ? `: ${d.failure}` : "."}` });
      return page;
    });
  });

  scope.post("/inbound/:id/delete", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    return formAction(reply, `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`, async () => {
      await deps.clients.receiving.deleteInboundDomain({ workspaceId: session.workspaceId, id }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "The inbound domain and its rules are deleted: its mail is refused from now on." });
      return `${CONSOLE_PREFIX}/inbound`;
    });
  });

  scope.post("/inbound/:id/rules", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      const f = form(request);
      // The form always sends the address field; an empty one is no address.
      const parsed = createInboundRuleSchema.safeParse({ match: f.match ?? "", action: f.action ?? "", ...(f.forwardTo?.trim() ? { forwardTo: f.forwardTo } : {}) });
      if (!parsed.success) throw refusal(invalid(parsed.error));
      const { rule } = await deps.clients.receiving.createInboundRule({ workspaceId: session.workspaceId, domainId: id, ...parsed.data }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `Rule ${rule?.match ?? parsed.data.match} added.` });
      return page;
    });
  });

  scope.post("/inbound/:id/rules/:ruleId/delete", async (request, reply) => {
    requireEdit(request);
    const session = sessionOf(request);
    const id = domainIdOf(request);
    const ruleId = String((request.params as { ruleId?: string }).ruleId ?? "");
    if (!INBOUND_RULE_ID.test(ruleId)) throw refusal({ code: "not_found", message: "There is no such rule in this workspace." });
    const page = `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;
    return formAction(reply, page, async () => {
      await deps.clients.receiving.deleteInboundRule({ workspaceId: session.workspaceId, domainId: id, id: ruleId }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: "Rule deleted." });
      return page;
    });
  });
}
