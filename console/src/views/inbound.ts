/**
 * Inbound domains (/console/inbound): the views. The handlers are pages/inbound.ts.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { InboundDomain, InboundRule } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { CONSOLE_PREFIX } from "../layout.js";
import { html, type Html } from "./html.js";
import { badge, copyButton, field, time } from "./page-parts.js";

const date = (t: Timestamp | undefined) => (t ? timestampDate(t) : undefined);
const domainUrl = (id: string) => `${CONSOLE_PREFIX}/inbound/${encodeURIComponent(id)}`;

const ACTION_WORDS: Record<string, string> = {
  webhook: "Webhook: an EMAIL_RECEIVED event",
  forward: "Forward",
  store: "Store: kept for the API only",
};

function statusOf(d: InboundDomain): Html {
  if (d.status === "verified") return badge("Verified", "ok");
  if (d.lastCheckedAt) return badge("MX not found", "bad");
  return badge("Pending DNS", "warn");
}

/** The MX record as a DNS provider asks for it: name, type, priority, host. */
function mxTable(d: InboundDomain): Html {
  return html`<div class="table-wrap"><table class="data stack" id="mx-record"><caption class="sr-only">MX record for ${d.domain}</caption>
<thead><tr><th scope="col">Type</th><th scope="col">Name</th><th scope="col" class="num">Priority</th><th scope="col">Mail server</th></tr></thead>
<tbody><tr><td data-label="Type"><strong>MX</strong></td>
<td data-label="Name"><code class="value one-line">${d.domain}</code> ${copyButton(d.domain, "name of the MX record")}</td>
<td data-label="Priority" class="num">${d.mxPriority}</td>
<td data-label="Mail server"><code class="value one-line">${d.mxHost}</code> ${copyButton(d.mxHost, "host of the MX record")}</td></tr></tbody></table></div>`;
}

/** `deleteCsrf`: the delete form's hidden field, when the session may delete rules. */
function ruleRow(domainId: string, r: InboundRule, deleteCsrf: string | undefined): Html {
  const match = r.match === "*" ? "Any address (*)" : r.match.endsWith("+*") ? `${r.match} (plus-addresses)` : r.match;
  const action = r.action === "forward" ? html`Forward to <code>${r.forwardTo}</code>` : html`${ACTION_WORDS[r.action] ?? r.action}`;
  const remove = deleteCsrf !== undefined
    ? html`<td data-label=""><form method="post" action="${domainUrl(domainId)}/rules/${encodeURIComponent(r.id)}/delete" data-confirm="Delete the rule ${r.match}? Mail only it takes is refused from then on.">${field(deleteCsrf)}<button type="submit" class="danger small" aria-label="Delete the rule ${r.match}">Delete</button></form></td>`
    : "";
  return html`<tr><td data-label="Addresses"><code>${match}</code></td><td data-label="Action">${action}</td>
<td data-label="Added">${time(date(r.createdAt))}</td>${remove}</tr>`;
}

function ruleForm(csrf: string, d: InboundDomain): Html {
  return html`<form method="post" action="${domainUrl(d.id)}/rules" class="card" id="new-rule">${field(csrf)}
<h3 style="margin-top:0">Add a rule</h3>
<div class="row">
<div class="field" style="flex:1 1 12rem"><label for="match">Addresses</label>
<input id="match" name="match" required autocomplete="off" spellcheck="false" placeholder="support, reply+* or *" style="width:100%" aria-describedby="matchHelp"></div>
<div class="field"><label for="action">Action</label><select id="action" name="action">
<option value="webhook">Webhook (EMAIL_RECEIVED)</option><option value="forward">Forward</option><option value="store">Store only</option></select></div>
<div class="field" style="flex:1 1 14rem"><label for="forwardTo">Forward to (for Forward)</label>
<input id="forwardTo" name="forwardTo" type="email" autocomplete="off" placeholder="team@example.com" style="width:100%"></div>
<div class="field"><button type="submit">Add rule</button></div></div>
<p id="matchHelp" class="muted"><code>support</code> takes support@${d.domain}; <code>reply+*</code> takes reply+<em>tag</em>@${d.domain} (the tag is given as <code>mailboxHash</code>); <code>*</code> takes every other address. Addresses no rule takes are refused. Forward needs an address.</p></form>`;
}

/** The inbound domains, and the add form when `csrf` is given (who may add). */
export function inboundListView(domains: InboundDomain[], csrf: string | undefined): Html {
  const table = domains.length
    ? html`<div class="table-wrap"><table class="data stack" id="inbound-domains"><caption class="sr-only">Inbound domains</caption>
<thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">MX record to publish</th><th scope="col">Last checked</th></tr></thead><tbody>
${domains.map((d) => html`<tr><td data-label="Domain"><a href="${domainUrl(d.id)}">${d.domain}</a></td>
<td data-label="Status">${statusOf(d)}</td>
<td data-label="MX record"><code>${d.domain} MX ${d.mxPriority} ${d.mxHost}</code></td>
<td data-label="Last checked">${time(date(d.lastCheckedAt))}</td></tr>`)}
</tbody></table></div>`
    : html`<p class="muted">No inbound domains yet. Add one to receive mail at its addresses.</p>`;
  const add = csrf !== undefined
    ? html`<form method="post" action="${CONSOLE_PREFIX}/inbound" class="card">${field(csrf)}
<div class="row"><div class="field" style="flex:1 1 16rem"><label for="domain">Receive mail for a domain</label>
<input id="domain" name="domain" required inputmode="url" autocomplete="off" spellcheck="false" placeholder="in.example.com" style="width:100%" aria-describedby="domainHelp"></div>
<div class="field"><button type="submit">Add domain</button></div></div>
<p id="domainHelp" class="muted">You will get the MX record to publish. A subdomain (<code>in.example.com</code>) keeps your mailboxes where they are.</p></form>`
    : "";
  return html`<h1>Inbound domains</h1>${add}${table}<p class="muted"><a href="${CONSOLE_PREFIX}/received">Received emails →</a></p>`;
}

/** The hidden CSRF field of each form the session may post (undefined: the form is not shown). */
export interface InboundDomainForms {
  verify?: string;
  remove?: string;
  addRule?: string;
  deleteRule?: string;
}

/** One inbound domain: status, the MX record to publish, its rules and the forms. */
export function inboundDomainView(d: InboundDomain, rules: InboundRule[], forms: InboundDomainForms): Html {
  const base = domainUrl(d.id);
  const failure = d.status !== "verified" && d.failure ? html`<p class="flash error" role="status">Last check: ${d.failure}</p>` : "";
  const verify = forms.verify !== undefined
    ? html`<form method="post" action="${base}/verify">${field(forms.verify)}<button type="submit">Re-check MX now</button></form>`
    : "";
  const remove = forms.remove !== undefined
    ? html`<form method="post" action="${base}/delete" data-confirm="Stop receiving mail for ${d.domain}? Its rules are deleted; emails already received are kept.">${field(forms.remove)}<button type="submit" class="danger">Delete domain</button></form>`
    : "";
  const rulesTable = rules.length
    ? html`<div class="table-wrap"><table class="data stack" id="rules"><caption class="sr-only">Rules of ${d.domain}</caption>
<thead><tr><th scope="col">Addresses</th><th scope="col">Action</th><th scope="col">Added</th>${forms.deleteRule !== undefined ? html`<th scope="col"><span class="sr-only">Delete</span></th>` : ""}</tr></thead>
<tbody>${rules.map((r) => ruleRow(d.id, r, forms.deleteRule))}</tbody></table></div>`
    : html`<p class="card" id="rules">No rules yet: every address of ${d.domain} is refused until a rule takes it.</p>`;
  return html`<p><a href="${CONSOLE_PREFIX}/inbound">← All inbound domains</a></p>
<h1>${d.domain}</h1>
<div class="card"><p>Status: <strong id="inbound-status">${statusOf(d)}</strong></p>
<p class="muted">Added: ${time(date(d.createdAt))} · Verified: ${time(date(d.verifiedAt))} · Last checked: ${time(date(d.lastCheckedAt))}</p>${failure}
<div class="actions">${verify}${remove}</div></div>
<h2>MX record to publish</h2>
<p class="muted">Add this record at your DNS provider; mail is taken once the re-check finds it. Some providers want only the part of the name before your own domain.</p>
${mxTable(d)}
<h2>Rules</h2>${rulesTable}${forms.addRule !== undefined ? ruleForm(forms.addRule, d) : ""}`;
}
