/**
 * Domains and senders (/console/domains): the views. The handlers are pages/domains.ts.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { CheckDirectSendingResponse, DnsRecord, Domain, ListSendersResponse } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { CONSOLE_PREFIX } from "../layout.js";
import { isAddressLiteral } from "./delivery.js";
import { dmarcCardView, type DmarcCardState } from "./domains-dmarc.js";
import { html, type Html } from "./html.js";
import { badge, copyButton, field, time } from "./page-parts.js";

const PURPOSE: Record<string, string> = {
  dkim: "DKIM signature key (required)",
  spf: "SPF: lets our servers send for the domain",
  dmarc: "DMARC policy (suggested)",
  "bounce-mx": "Return path: bounces come back here",
  "bounce-spf": "Return path SPF",
};

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);
const domainUrl = (domain: string) => `${CONSOLE_PREFIX}/domains/${encodeURIComponent(domain)}`;

function domainStatus(d: Domain): Html {
  if (d.verified) return badge("Verified", "ok");
  if (d.lastCheckedAt) return badge("Not verified", "bad");
  return badge("Pending DNS", "warn");
}

function recordRow(r: DnsRecord, i: number): Html {
  const checked = r.purpose === "dkim" || r.purpose === "spf" || r.purpose === "dmarc";
  const status = checked ? (r.verified ? badge("Found", "ok") : badge("Not found", "warn")) : badge("Recommended", "info");
  return html`<tr>
<td data-label="Type"><strong>${r.type}</strong></td>
<td data-label="Purpose">${PURPOSE[r.purpose] ?? r.purpose}</td>
<td data-label="Name"><code class="value one-line" id="rec-name-${i}" tabindex="0">${r.name}</code> ${copyButton(r.name, `name of the ${r.purpose} record`)}</td>
<td data-label="Value"><code class="value" id="rec-value-${i}">${r.value}</code> ${copyButton(r.value, `value of the ${r.purpose} record`)}</td>
<td data-label="Status">${status}</td></tr>`;
}

/** The list of domains and sender addresses; the add form when `csrf` is given (who may add). */
export function domainListView(senders: Pick<ListSendersResponse, "domains" | "emails">, csrf: string | undefined): Html {
  const domains = senders.domains.length
    ? html`<div class="table-wrap"><table class="data stack"><caption class="sr-only">Sending domains</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">Last checked</th></tr></thead><tbody>
${senders.domains.map((d) => html`<tr><td data-label="Domain"><a href="${domainUrl(d.domain)}">${d.domain}</a></td>
<td data-label="Status">${domainStatus(d)}</td><td data-label="Last checked">${time(date(d.lastCheckedAt))}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No domains yet. Add one to send from any address on it.</p>`;
  const emails = senders.emails.length
    ? html`<ul>${senders.emails.map((e) => html`<li>${e.email} ${e.verified ? badge("Verified", "ok") : badge("Pending", "warn")}</li>`)}</ul>`
    : html`<p class="muted">No single sender addresses.</p>`;
  const add = csrf !== undefined
    ? html`<form method="post" action="${CONSOLE_PREFIX}/domains" class="card">${field(csrf)}
<div class="row"><div class="field" style="flex:1 1 16rem"><label for="domain">Add a domain</label>
<input id="domain" name="domain" required inputmode="url" autocomplete="off" spellcheck="false" placeholder="mail.example.com" style="width:100%" aria-describedby="domainHelp"></div>
<div class="field"><button type="submit">Add domain</button></div></div>
<p id="domainHelp" class="muted">You will get the DNS records to publish; sending is allowed once the DKIM record is found.</p></form>`
    : "";
  return html`<h1>Domains and senders</h1>${add}<h2>Domains</h2>${domains}<h2>Sender addresses</h2>${emails}`;
}

const SPF_TONE: Record<string, "ok" | "warn" | "bad"> = { pass: "ok", neutral: "warn", none: "bad", softfail: "bad", fail: "bad", temperror: "warn", permerror: "bad" };

/** The SPF mechanism that authorises one address. */
const spfMechanism = (address: string) => (address.includes(":") ? `ip6:${address}` : `ip4:${address}`);

/** What a direct sender's DNS looks like for the domain (CheckDirectSending's answer). */
export function directSendingView(domain: string, address: string, ehloName: string, c: CheckDirectSendingResponse): Html {
  const reverse = c.confirmedName
    ? html`${badge("Confirmed", "ok")} <code>${address}</code> → <code>${c.confirmedName}</code> → <code>${address}</code>${
      c.ehloMatches ? "" : ehloName && !isAddressLiteral(ehloName)
        ? html`<br>${badge("Not the EHLO name", "warn")} <span class="muted">delivery says EHLO <code>${ehloName}</code>; make the PTR name and MAILROOM_DELIVERY_EHLO_NAME the same name.</span>`
        : html`<br>${badge("No EHLO name", "warn")} <span class="muted">delivery says EHLO with its address literal${ehloName ? html` <code>${ehloName}</code>` : ""}: set MAILROOM_DELIVERY_EHLO_NAME=${c.confirmedName}.</span>`}`
    : html`${badge("Missing", "bad")} <span class="muted">${c.reverseError}. Ask whoever runs the address (the hosting provider) for a PTR record naming <code>${ehloName || `mail.${domain}`}</code>, and give that name an A/AAAA record of <code>${address}</code>.</span>`;
  const spfRows = c.spf.map((r) => {
    const advice = r.result === "pass" ? "" : html`<br><span class="muted">Add <code>${spfMechanism(address)}</code> to the SPF record of <code>${r.domain}</code>.</span>`;
    return html`<tr><td data-label="Domain"><code>${r.domain}</code><br><span class="muted">${r.role === "return-path" ? "return path (bounces)" : "From domain"}</span></td>
<td data-label="Result">${badge(r.result, SPF_TONE[r.result] ?? "warn")}${advice}</td><td data-label="Record">${r.detail ? html`<code class="value">${r.detail}</code>` : html`<span class="muted">—</span>`}</td></tr>`;
  });
  return html`<h2>Direct delivery DNS</h2>
<div class="card" id="direct-dns"><p class="muted">Delivery sends straight to recipients' MX hosts from <code>${address}</code>. Receivers check its reverse DNS and SPF (looked up just now).</p>
<p><strong>Reverse DNS (PTR):</strong> ${reverse}</p>
<div class="table-wrap"><table class="data stack" id="direct-spf"><caption class="sr-only">SPF of ${address}</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">SPF for ${address}</th><th scope="col">Record</th></tr></thead><tbody>${spfRows}</tbody></table></div></div>`;
}

/** The domain page's direct-sending card: none (no direct route), a hint, the check, or why it did not run. */
export type DirectSendingCard =
  | { kind: "none" }
  | { kind: "no-local-address" }
  | { kind: "checked"; address: string; ehloName: string; check: CheckDirectSendingResponse }
  | { kind: "failed"; message: string };

function directSendingCardView(domain: string, card: DirectSendingCard): Html | string {
  switch (card.kind) {
    case "none": return "";
    case "no-local-address":
      return html`<h2>Direct delivery DNS</h2><div class="card" id="direct-dns"><p>Delivery sends straight to recipients' MX hosts, from the host's default address.
To check that address's reverse DNS (PTR) and SPF here, set <code>MAILROOM_DELIVERY_LOCAL_ADDRESS</code> to the address delivery sends from.</p></div>`;
    case "checked": return directSendingView(domain, card.address, card.ehloName, card.check);
    case "failed": return html`<h2>Direct delivery DNS</h2><div class="card" id="direct-dns"><p class="flash error" role="status">The check did not run: ${card.message}</p></div>`;
  }
}

export interface DomainPageData {
  domain: Domain;
  /** The re-check form's hidden field, when the session may re-check. */
  recheckCsrf?: string;
  dmarc: DmarcCardState;
  direct: DirectSendingCard;
}

/** One domain: its status, the DNS records to publish, its DMARC reports and direct-sending DNS. */
export function domainPageView({ domain: d, recheckCsrf, dmarc, direct }: DomainPageData): Html {
  const error = !d.verified && d.verificationError ? html`<p class="flash error" role="status">Last check: ${d.verificationError}</p>` : "";
  const recheck = recheckCsrf !== undefined
    ? html`<form method="post" action="${domainUrl(d.domain)}/verify">${field(recheckCsrf)}<button type="submit">Re-check DNS now</button></form>`
    : "";
  return html`<p><a href="${CONSOLE_PREFIX}/domains">← All domains</a></p>
<h1>${d.domain}</h1>
<div class="card"><p>Status: <strong id="domain-status">${domainStatus(d)}</strong></p>
<p class="muted">Verified: ${time(date(d.verifiedAt))} · Last checked: ${time(date(d.lastCheckedAt))}</p>${error}${recheck}</div>
<h2>DNS records to publish</h2>
<p class="muted">Add these at your DNS provider. Names are fully qualified; some providers want only the part before <code>${d.domain}</code>.</p>
<div class="table-wrap"><table class="data stack"><caption class="sr-only">DNS records for ${d.domain}</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Purpose</th><th scope="col">Name</th><th scope="col">Value</th><th scope="col">Status</th></tr></thead>
<tbody>${d.records.map(recordRow)}</tbody></table></div>
${dmarcCardView(dmarc)}
${directSendingCardView(d.domain, direct)}`;
}
