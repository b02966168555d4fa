/**
 * Domains and senders: what the workspace may send from, the DNS records each domain must
 * publish (with copy buttons), its verification status and a re-check that runs the
 * accounts unit's real DNS lookup (VerifyDomain), and a form to add a domain. The markup is
 * views/domains.ts. No /v1 route adds a domain: the form's parsing is the console's own.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { CONSOLE_PREFIX, consolePage } from "../layout.js";
import { mayPost, sessionOf, setFlash } from "../session.js";
import { isAddressLiteral, modeOf } from "../views/delivery.js";
import { domainListView, domainPageView, type DirectSendingCard } from "../views/domains.js";
import { render } from "../views/html.js";
import { deliveryStatus } from "./delivery.js";
import { dmarcCardState } from "./domains-dmarc.js";
import { formAction, requireEdit } from "./form-action.js";

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/i;

function domainParam(request: FastifyRequest): string {
  const domain = String((request.params as { domain?: string }).domain ?? "").toLowerCase();
  if (!DOMAIN.test(domain)) throw refusal({ code: "not_found", message: "There is no such domain in this workspace." });
  return domain;
}

/** The direct-sending card of a domain page: only when delivery sends direct on some route; never fails the page. */
async function directSendingCard(deps: ConsoleDeps, request: FastifyRequest, workspaceId: string, domain: string): Promise<DirectSendingCard> {
  const { status } = await deliveryStatus(deps, request);
  // Any direct route makes the domain's DNS the operator's job (a relay-mode failover route too).
  if (!status || (modeOf(status) !== "direct" && !status.routes.some((r) => r.kind === "direct"))) return { kind: "none" };
  if (!status.localAddress) return { kind: "no-local-address" };
  try {
    const check = await deps.clients.accounts.checkDirectSending(
      // An address literal is no name: the check is then for the PTR alone.
      { workspaceId, domain, address: status.localAddress, ehloName: isAddressLiteral(status.ehloName) ? "" : status.ehloName },
      { ...rpcOptions(request), timeoutMs: 15_000 },
    );
    return { kind: "checked", address: status.localAddress, ehloName: status.ehloName, check };
  } catch (err) {
    return { kind: "failed", message: bodyFromError(err).message };
  }
}

export function registerDomainPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/domains", async (request, reply) => {
    const session = sessionOf(request);
    const senders = await deps.clients.accounts.listSenders({ workspaceId: session.workspaceId }, rpcOptions(request));
    const body = domainListView(senders, mayPost(session, "/console/domains") ? csrfField(session) : undefined);
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Domains", session, active: "domains", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/domains", async (request, reply) => {
    const session = sessionOf(request);
    requireEdit(request);
    const domain = String((request.body as Record<string, unknown> | undefined)?.domain ?? "").trim().toLowerCase().replace(/\.$/, "");
    return formAction(reply, `${CONSOLE_PREFIX}/domains`, async () => {
      if (!DOMAIN.test(domain)) throw refusal({ code: "invalid_request", message: "Enter a domain name such as mail.example.com." });
      const { domain: added } = await deps.clients.accounts.addDomain({ workspaceId: session.workspaceId, domain }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${added?.domain ?? domain} added. Publish the records below, then re-check.` });
      return `${CONSOLE_PREFIX}/domains/${encodeURIComponent(added?.domain ?? domain)}`;
    });
  });

  scope.get("/domains/:domain", async (request, reply) => {
    const session = sessionOf(request);
    const name = domainParam(request);
    const { domain: d } = await deps.clients.accounts.getDomain({ workspaceId: session.workspaceId, domain: name }, rpcOptions(request));
    if (!d) throw refusal({ code: "not_found", message: "There is no such domain in this workspace." });
    const [dmarc, direct] = await Promise.all([
      dmarcCardState(deps, request, session.workspaceId, d),
      directSendingCard(deps, request, session.workspaceId, d.domain),
    ]);
    const body = domainPageView({
      domain: d, dmarc, direct,
      recheckCsrf: mayPost(session, "/console/domains/:domain/verify") ? csrfField(session) : undefined,
    });
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: d.domain, session, active: "domains", flash: request.consoleFlash, body: render(body) }));
  });

  scope.post("/domains/:domain/verify", async (request, reply) => {
    const session = sessionOf(request);
    requireEdit(request);
    const name = domainParam(request);
    const page = `${CONSOLE_PREFIX}/domains/${encodeURIComponent(name)}`;
    return formAction(reply, page, async () => {
      const { domain: d } = await deps.clients.accounts.verifyDomain({ workspaceId: session.workspaceId, domain: name }, rpcOptions(request));
      setFlash(reply, d?.verified
        ? { kind: "ok", message: `${name} is verified: you can send from it.` }
        : { kind: "error", message: `${name} is not verified yet${d?.verificationError ? `: ${d.verificationError}` : "."}` });
      return page;
    });
  });
}
