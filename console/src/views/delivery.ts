/**
 * Delivery (/console/delivery): the views. The handler is pages/delivery.ts.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { GetStatusResponse, RouteStatus } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { html, type Html } from "./html.js";
import { badge, time } from "./page-parts.js";

const MODES: Record<string, string> = {
  relay: "Relay: mail goes through the SMTP relays below",
  direct: "Direct: mail goes straight to each recipient domain's MX hosts",
  capture: "Capture: mail is kept locally, nothing is sent (development)",
};

/** The mode: the status's own, else what older delivery processes tell (a relay URL or capturing). */
export function modeOf(s: GetStatusResponse): string {
  return s.mode || (s.capturing ? "capture" : "relay");
}

/** An EHLO that is an address literal ("[192.0.2.10]"): delivery has no qualified name to say. */
export const isAddressLiteral = (ehlo: string) => ehlo.startsWith("[");

const num = (n: bigint | number) => Number(n).toLocaleString("en-US");

/** What every counter on the page counts: the whole process's mail, not the viewer's workspace's. */
const ALL_WORKSPACES = "this delivery process, all workspaces";

function workspacesText(r: RouteStatus, workspaceId: string): string {
  if (!r.workspaces.length) return "All";
  const mine = r.workspaces.includes(workspaceId);
  const others = r.workspaces.length - (mine ? 1 : 0);
  return [mine ? "This workspace" : "", others ? `${others} other workspace${others === 1 ? "" : "s"}` : ""].filter(Boolean).join(" and ") + " only";
}

function health(r: RouteStatus): Html {
  if (!r.down) return badge("Up", "ok");
  const until = r.downUntil ? timestampDate(r.downUntil) : undefined;
  return html`${badge("Down", "bad")} <span class="muted" data-field="Down until">until ${time(until)}</span>`;
}

/** One labelled fact inside a cell (data-field names it for tests and scripts). */
const fact = (label: string, value: Html | string) => html`<div data-field="${label}"><span class="muted">${label}:</span> ${value}</div>`;

function routeRow(r: RouteStatus, workspaceId: string): Html {
  const lanes = r.lanes.length ? r.lanes.join(", ") : "Both";
  const error = r.lastError ? html`<div data-field="Last error" class="muted">Last error: ${r.lastError}</div>` : "";
  const count = (label: string, n: bigint) => html`<td data-label="${label}" class="num" style="white-space:nowrap">${num(n)}</td>`;
  return html`<tr>
<th scope="row" data-label="Route" style="white-space:nowrap"><code data-field="Route">${r.name}</code><div data-field="Kind" class="muted">${r.kind}</div></th>
<td data-label="Target"><code data-field="Target">${r.target}</code>${r.provider ? fact("Provider", r.provider) : ""}</td>
<td data-label="Carries">${fact("Weight", String(r.weight))}${fact("Lanes", lanes)}${fact("Workspaces", workspacesText(r, workspaceId))}</td>
<td data-label="Health" style="min-width:12rem">${health(r)}${error}</td>
${count("Sent", r.sentTotal)}${count("Deferred", r.deferredTotal)}${count("Bounced", r.bouncedTotal)}${count("Failed", r.failedTotal)}
<td data-label="Latency" class="num" style="white-space:nowrap">${r.latencyMs ? `${Math.round(r.latencyMs)} ms` : "—"}</td></tr>`;
}

/** GetStatus's ehlo_name: the name, the address literal sent instead, or "" (a literal of the address the system picks). */
export function ehloView(ehlo: string): Html {
  const advice = html`<span class="muted">no fully qualified name: set MAILROOM_DELIVERY_EHLO_NAME to the PTR name of the sending address (many receivers distrust an address literal)</span>`;
  if (!ehlo) return html`<span class="muted">the source address literal;</span> ${advice}`;
  return isAddressLiteral(ehlo) ? html`<code>${ehlo}</code> ${advice}` : html`<code>${ehlo}</code>`;
}

function statusView(s: GetStatusResponse, workspaceId: string): Html {
  const mode = modeOf(s);
  const facts: Array<[string, Html | string]> = [
    ["Mode", MODES[mode] ?? mode],
    ...(mode === "direct" || s.routes.some((r) => r.kind === "direct")
      ? ([
        ["EHLO name", ehloView(s.ehloName)],
        ["Source address", s.localAddress ? html`<code>${s.localAddress}</code>` : html`<span class="muted">the host’s default (set MAILROOM_DELIVERY_LOCAL_ADDRESS to choose one and check its DNS)</span>`],
      ] as Array<[string, Html]>)
      : []),
    [`In flight (${ALL_WORKSPACES})`, num(s.inFlight)],
    [`Sent / deferred / bounced / failed (${ALL_WORKSPACES})`, `${num(s.sentTotal)} / ${num(s.deferredTotal)} / ${num(s.bouncedTotal)} / ${num(s.failedTotal)}`],
    ["Process", html`<code>${s.processId || "—"}</code>`],
  ];
  const table = s.routes.length
    ? html`<div class="table-wrap"><table class="data stack" id="routes"><caption class="sr-only">Delivery routes and their health</caption>
<thead><tr><th scope="col">Route</th><th scope="col">Target</th><th scope="col">Carries</th><th scope="col">Health</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Deferred</th><th scope="col" class="num">Bounced</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Latency</th></tr></thead>
<tbody>${s.routes.map((r) => routeRow(r, workspaceId))}</tbody></table></div>`
    : html`<p class="card" id="routes">This delivery process reports no routes${s.relay ? html`; it sends through <code>${s.relay}</code>` : ""}.</p>`;
  return html`<div class="card"><table class="data" id="delivery-facts"><tbody>${facts.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`)}</tbody></table></div>
<h2>Routes</h2>${table}
<p class="muted" id="counters-scope">Counters and health are those of the delivery process that answered, since it started: every workspace's mail together, not this workspace's alone. A route that refuses connections or answers 4xx to everything is marked down for a while and its traffic moves to the others.</p>`;
}

/** The page: the status, or why the delivery service could not tell it. */
export function deliveryView(status: GetStatusResponse | undefined, error: string | undefined, workspaceId: string): Html {
  return html`<h1>Delivery</h1>${status
    ? statusView(status, workspaceId)
    : html`<p class="flash error" role="alert">The delivery service did not answer: ${error ?? ""}</p>`}`;
}
