/**
 * Domains and senders: what the workspace may send from, the DNS records each domain must
 * publish (with copy buttons), its verification status and a re-check that runs the
 * directory's real DNS lookup (VerifyDomain), and a form to add a domain.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { DnsRecord, Domain } from "@mailroom/proto/directory/v1/directory_pb.js";
import { bodyFromError, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { csrfField } from "./csrf.js";
import { CONSOLE_PREFIX, consolePage, escapeHtml, formatTime, statusBadge } from "./layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "./session.js";
import { deliveryStatus, isAddressLiteral, modeOf } from "./delivery.js";
import type { CheckDirectSendingResponse } from "@mailroom/proto/directory/v1/directory_pb.js";
import { dmarcCard } from "./domains-dmarc.js";

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/i;

const PURPOSE: Record<string, string> = {
  dkim: "DKIM signature key (required)",
  spf: "SPF: lets our servers send for the domain",
  dmarc: "DMARC policy (suggested)",
  "bounce-mx": "Return path: bounces come back here",
  "bounce-spf": "Return path SPF",
};

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);

function domainParam(request: FastifyRequest): string {
  const domain = String((request.params as { domain?: string }).domain ?? "").toLowerCase();
  if (!DOMAIN.test(domain)) throw refusal({ code: "not_found", message: "There is no such domain in this workspace." });
  return domain;
}

/** Runs a form's action; a refusal the user can fix comes back as a flash on `back`, not an error page. */
async function formAction(reply: FastifyReply, back: string, action: () => Promise<string>): Promise<FastifyReply> {
  try {
    return seeOther(reply, await action());
  } catch (err) {
    const body = bodyFromError(err);
    if (body.statusCode >= 500 || body.statusCode === 404) throw err;
    setFlash(reply, { kind: "error", message: body.message });
    return seeOther(reply, back);
  }
}

function domainStatus(d: Domain): string {
  if (d.verified) return statusBadge("Verified", "ok");
  if (d.lastCheckedAt) return statusBadge("Not verified", "bad");
  return statusBadge("Pending DNS", "warn");
}

function recordRow(r: DnsRecord, i: number): string {
  const checked = r.purpose === "dkim" || r.purpose === "spf" || r.purpose === "dmarc";
  const status = checked ? (r.verified ? statusBadge("Found", "ok") : statusBadge("Not found", "warn")) : statusBadge("Recommended", "info");
  const copy = (text: string, what: string) =>
    `<button type="button" class="secondary small" data-copy="${escapeHtml(text)}" hidden aria-label="Copy ${escapeHtml(what)}">Copy</button>`;
  return `<tr>
<td data-label="Type"><strong>${escapeHtml(r.type)}</strong></td>
<td data-label="Purpose">${escapeHtml(PURPOSE[r.purpose] ?? r.purpose)}</td>
<td data-label="Name"><code class="value one-line" id="rec-name-${i}" tabindex="0">${escapeHtml(r.name)}</code> ${copy(r.name, `name of the ${r.purpose} record`)}</td>
<td data-label="Value"><code class="value" id="rec-value-${i}">${escapeHtml(r.value)}</code> ${copy(r.value, `value of the ${r.purpose} record`)}</td>
<td data-label="Status">${status}</td></tr>`;
}

const SPF_TONE: Record<string, "ok" | "warn" | "bad"> = { pass: "ok", neutral: "warn", none: "bad", softfail: "bad", fail: "bad", temperror: "warn", permerror: "bad" };

/** The SPF mechanism that authorises one address. */
const spfMechanism = (address: string) => (address.includes(":") ? `ip6:${address}` : `ip4:${address}`);

/** What a direct sender's DNS looks like for the domain (CheckDirectSending's answer). */
export function directSendingHtml(domain: string, address: string, ehloName: string, c: CheckDirectSendingResponse): string {
  const reverse = c.confirmedName
    ? `${statusBadge("Confirmed", "ok")} <code>${escapeHtml(address)}</code> → <code>${escapeHtml(c.confirmedName)}</code> → <code>${escapeHtml(address)}</code>${
      c.ehloMatches ? "" : ehloName && !isAddressLiteral(ehloName)
        ? `<br>${statusBadge("Not the EHLO name", "warn")} <span class="muted">delivery says EHLO <code>${escapeHtml(ehloName)}</code>; make the PTR name and MAILROOM_DELIVERY_EHLO_NAME the same name.</span>`
        : `<br>${statusBadge("No EHLO name", "warn")} <span class="muted">delivery says EHLO with its address literal${ehloName ? ` <code>${escapeHtml(ehloName)}</code>` : ""}: set MAILROOM_DELIVERY_EHLO_NAME=${escapeHtml(c.confirmedName)}.</span>`}`
    : `${statusBadge("Missing", "bad")} <span class="muted">${escapeHtml(c.reverseError)}. Ask whoever runs the address (the hosting provider) for a PTR record naming <code>${escapeHtml(ehloName || `mail.${domain}`)}</code>, and give that name an A/AAAA record of <code>${escapeHtml(address)}</code>.</span>`;
  const spfRows = c.spf.map((r) => {
    const advice = r.result === "pass" ? "" : `<br><span class="muted">Add <code>${escapeHtml(spfMechanism(address))}</code> to the SPF record of <code>${escapeHtml(r.domain)}</code>.</span>`;
    return `<tr><td data-label="Domain"><code>${escapeHtml(r.domain)}</code><br><span class="muted">${r.role === "return-path" ? "return path (bounces)" : "From domain"}</span></td>
<td data-label="Result">${statusBadge(r.result, SPF_TONE[r.result] ?? "warn")}${advice}</td><td data-label="Record">${r.detail ? `<code class="value">${escapeHtml(r.detail)}</code>` : '<span class="muted">—</span>'}</td></tr>`;
  }).join("");
  return `<h2>Direct delivery DNS</h2>
<div class="card" id="direct-dns"><p class="muted">Delivery sends straight to recipients' MX hosts from <code>${escapeHtml(address)}</code>. Receivers check its reverse DNS and SPF (looked up just now).</p>
<p><strong>Reverse DNS (PTR):</strong> ${reverse}</p>
<div class="table-wrap"><table class="data stack" id="direct-spf"><caption class="sr-only">SPF of ${escapeHtml(address)}</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">SPF for ${escapeHtml(address)}</th><th scope="col">Record</th></tr></thead><tbody>${spfRows}</tbody></table></div></div>`;
}

/** The direct-sending card of a domain page: only when delivery sends direct on some route; never fails the page. */
async function directSendingCard(deps: ConsoleDeps, request: FastifyRequest, workspaceId: string, domain: string): Promise<string> {
  const { status } = await deliveryStatus(deps, request);
  // Any direct route makes the domain's DNS the operator's job (a relay-mode failover route too).
  if (!status || (modeOf(status) !== "direct" && !status.routes.some((r) => r.kind === "direct"))) return "";
  if (!status.localAddress) {
    return `<h2>Direct delivery DNS</h2><div class="card" id="direct-dns"><p>Delivery sends straight to recipients' MX hosts, from the host's default address.
To check that address's reverse DNS (PTR) and SPF here, set <code>MAILROOM_DELIVERY_LOCAL_ADDRESS</code> to the address delivery sends from.</p></div>`;
  }
  try {
    const check = await deps.clients.directory.checkDirectSending(
      // An address literal is no name: the check is then for the PTR alone.
      { workspaceId, domain, address: status.localAddress, ehloName: isAddressLiteral(status.ehloName) ? "" : status.ehloName },
      { ...rpcOptions(request), timeoutMs: 15_000 },
    );
    return directSendingHtml(domain, status.localAddress, status.ehloName, check);
  } catch (err) {
    return `<h2>Direct delivery DNS</h2><div class="card" id="direct-dns"><p class="flash error" role="status">The check did not run: ${escapeHtml(bodyFromError(err).message)}</p></div>`;
  }
}

export function registerDomainPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/domains", async (request, reply) => {
    const session = sessionOf(request);
    const senders = await deps.clients.directory.listSenders({ workspaceId: session.workspaceId }, rpcOptions(request));
    const domains = senders.domains.length
      ? `<div class="table-wrap"><table class="data stack"><caption class="sr-only">Sending domains</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">Last checked</th></tr></thead><tbody>
${senders.domains.map((d) => `<tr><td data-label="Domain"><a href="${CONSOLE_PREFIX}/domains/${encodeURIComponent(d.domain)}">${escapeHtml(d.domain)}</a></td>
<td data-label="Status">${domainStatus(d)}</td><td data-label="Last checked">${formatTime(date(d.lastCheckedAt))}</td></tr>`).join("")}
</tbody></table></div>`
      : `<p class="muted">No domains yet. Add one to send from any address on it.</p>`;
    const emails = senders.emails.length
      ? `<ul>${senders.emails.map((e) => `<li>${escapeHtml(e.email)} ${e.verified ? statusBadge("Verified", "ok") : statusBadge("Pending", "warn")}</li>`).join("")}</ul>`
      : `<p class="muted">No single sender addresses.</p>`;
    const add = mayPost(session, "/console/domains")
      ? `<form method="post" action="${CONSOLE_PREFIX}/domains" class="card">${csrfField(session)}
<div class="row"><div class="field" style="flex:1 1 16rem"><label for="domain">Add a domain</label>
<input id="domain" name="domain" required inputmode="url" autocomplete="off" spellcheck="false" placeholder="mail.example.com" style="width:100%" aria-describedby="domainHelp"></div>
<div class="field"><button type="submit">Add domain</button></div></div>
<p id="domainHelp" class="muted">You will get the DNS records to publish; sending is allowed once the DKIM record is found.</p></form>`
      : "";
    return reply.type("text/html; charset=utf-8").send(consolePage({
      title: "Domains", session, active: "domains", flash: request.consoleFlash,
      body: `<h1>Domains and senders</h1>${add}<h2>Domains</h2>${domains}<h2>Sender addresses</h2>${emails}`,
    }));
  });

  scope.post("/domains", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw refusal({ code: "forbidden", status: 403, message: "This API key can only view the console." });
    const domain = String((request.body as Record<string, unknown> | undefined)?.domain ?? "").trim().toLowerCase().replace(/\.$/, "");
    return formAction(reply, `${CONSOLE_PREFIX}/domains`, async () => {
      if (!DOMAIN.test(domain)) throw refusal({ code: "invalid_request", message: "Enter a domain name such as mail.example.com." });
      const { domain: added } = await deps.clients.directory.addDomain({ workspaceId: session.workspaceId, domain }, rpcOptions(request));
      setFlash(reply, { kind: "ok", message: `${added?.domain ?? domain} added. Publish the records below, then re-check.` });
      return `${CONSOLE_PREFIX}/domains/${encodeURIComponent(added?.domain ?? domain)}`;
    });
  });

  scope.get("/domains/:domain", async (request, reply) => {
    const session = sessionOf(request);
    const name = domainParam(request);
    const { domain: d } = await deps.clients.directory.getDomain({ workspaceId: session.workspaceId, domain: name }, rpcOptions(request));
    if (!d) throw refusal({ code: "not_found", message: "There is no such domain in this workspace." });
    const error = !d.verified && d.verificationError ? `<p class="flash error" role="status">Last check: ${escapeHtml(d.verificationError)}</p>` : "";
    const recheck = mayPost(session, "/console/domains/:domain/verify")
      ? `<form method="post" action="${CONSOLE_PREFIX}/domains/${encodeURIComponent(d.domain)}/verify">${csrfField(session)}<button type="submit">Re-check DNS now</button></form>`
      : "";
    const body = `<p><a href="${CONSOLE_PREFIX}/domains">← All domains</a></p>
<h1>${escapeHtml(d.domain)}</h1>
<div class="card"><p>Status: <strong id="domain-status">${domainStatus(d)}</strong></p>
<p class="muted">Verified: ${formatTime(date(d.verifiedAt))} · Last checked: ${formatTime(date(d.lastCheckedAt))}</p>${error}${recheck}</div>
<h2>DNS records to publish</h2>
<p class="muted">Add these at your DNS provider. Names are fully qualified; some providers want only the part before <code>${escapeHtml(d.domain)}</code>.</p>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">DNS records for ${escapeHtml(d.domain)}</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Purpose</th><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Status</th></tr></thead>
<tbody>${d.records.map(recordRow).join("")}</tbody></table></div>
${await dmarcCard(deps, request, session.workspaceId, d)}
${await directSendingCard(deps, request, session.workspaceId, d.domain)}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: d.domain, session, active: "domains", flash: request.consoleFlash, body }));
  });

  scope.post("/domains/:domain/verify", async (request, reply) => {
    const session = sessionOf(request);
    if (!session.canEdit) throw refusal({ code: "forbidden", status: 403, message: "This API key can only view the console." });
    const name = domainParam(request);
    const page = `${CONSOLE_PREFIX}/domains/${encodeURIComponent(name)}`;
    return formAction(reply, page, async () => {
      const { domain: d } = await deps.clients.directory.verifyDomain({ workspaceId: session.workspaceId, domain: name }, rpcOptions(request));
      setFlash(reply, d?.verified
        ? { kind: "ok", message: `${name} is verified: you can send from it.` }
        : { kind: "error", message: `${name} is not verified yet${d?.verificationError ? `: ${d.verificationError}` : "."}` });
      return page;
    });
  });
}
