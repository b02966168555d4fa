/**
 * Delivery: how mail leaves (DESIGN §9.7), as the delivery process answering GetStatus sees
 * it: the mode (relay, direct, capture), the EHLO name and source address of direct delivery,
 * and each route with its kind, target, weight, lanes, workspaces, provider, health (up, or
 * down until when and why) and counters. Also `directSendingStatus`, what the domain page
 * needs to know to check a domain's DNS for direct sending.
 *
 * All of it is process-wide (one delivery process carries every workspace's mail), so it is the
 * operator's, not a tenant's: the page is for owners and admins (and console sessions of keys
 * as high), by its rule in roles.ts; the nav hides it from the others. Its counters are labelled
 * as the delivery process's, across all workspaces (there are no per-workspace counters here).
 * Even there a route reserved for other workspaces shows how many, never their ids.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { GetStatusResponse, RouteStatus } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { consolePage, escapeHtml, formatTime, statusBadge } from "./layout.js";
import { sessionOf } from "./session.js";

const MODES: Record<string, string> = {
  relay: "Relay: mail goes through the SMTP relays below",
  direct: "Direct: mail goes straight to each recipient domain's MX hosts",
  capture: "Capture: mail is kept locally, nothing is sent (development)",
};

/** The delivery status, or the reason it could not be read (the pages show it instead of failing). */
export async function deliveryStatus(deps: ConsoleDeps, request: FastifyRequest): Promise<{ status?: GetStatusResponse; error?: string }> {
  try {
    return { status: await deps.clients.delivery.getStatus({}, { ...rpcOptions(request), timeoutMs: 5_000 }) };
  } catch (err) {
    return { error: bodyFromError(err).message };
  }
}

/** The mode: the status's own, else what older delivery processes tell (a relay URL or capturing). */
export function modeOf(s: GetStatusResponse): string {
  return s.mode || (s.capturing ? "capture" : "relay");
}

const num = (n: bigint | number) => Number(n).toLocaleString("en-US");

/** What every counter on the page counts: the whole process's mail, not the viewer's workspace's. */
const ALL_WORKSPACES = "this delivery process, all workspaces";

function workspacesText(r: RouteStatus, workspaceId: string): string {
  if (!r.workspaces.length) return "All";
  const mine = r.workspaces.includes(workspaceId);
  const others = r.workspaces.length - (mine ? 1 : 0);
  return [mine ? "This workspace" : "", others ? `${others} other workspace${others === 1 ? "" : "s"}` : ""].filter(Boolean).join(" and ") + " only";
}

function health(r: RouteStatus): string {
  if (!r.down) return statusBadge("Up", "ok");
  const until = r.downUntil ? timestampDate(r.downUntil) : undefined;
  return `${statusBadge("Down", "bad")} <span class="muted" data-field="Down until">until ${formatTime(until)}</span>`;
}

/** One labelled fact inside a cell (data-field names it for tests and scripts). */
const fact = (label: string, html: string) => `<div data-field="${label}"><span class="muted">${label}:</span> ${html}</div>`;

function routeRow(r: RouteStatus, workspaceId: string): string {
  const lanes = r.lanes.length ? r.lanes.join(", ") : "Both";
  const error = r.lastError ? `<div data-field="Last error" class="muted">Last error: ${escapeHtml(r.lastError)}</div>` : "";
  const count = (label: string, n: bigint) => `<td data-label="${label}" class="num" style="white-space:nowrap">${num(n)}</td>`;
  return `<tr>
<th scope="row" data-label="Route" style="white-space:nowrap"><code data-field="Route">${escapeHtml(r.name)}</code><div data-field="Kind" class="muted">${escapeHtml(r.kind)}</div></th>
<td data-label="Target"><code data-field="Target">${escapeHtml(r.target)}</code>${r.provider ? fact("Provider", escapeHtml(r.provider)) : ""}</td>
<td data-label="Carries">${fact("Weight", String(r.weight))}${fact("Lanes", escapeHtml(lanes))}${fact("Workspaces", escapeHtml(workspacesText(r, workspaceId)))}</td>
<td data-label="Health" style="min-width:12rem">${health(r)}${error}</td>
${count("Sent", r.sentTotal)}${count("Deferred", r.deferredTotal)}${count("Bounced", r.bouncedTotal)}${count("Failed", r.failedTotal)}
<td data-label="Latency" class="num" style="white-space:nowrap">${r.latencyMs ? `${Math.round(r.latencyMs)} ms` : "—"}</td></tr>`;
}

/** An EHLO that is an address literal ("[192.0.2.10]"): delivery has no qualified name to say. */
export const isAddressLiteral = (ehlo: string) => ehlo.startsWith("[");

/** GetStatus's ehlo_name: the name, the address literal sent instead, or "" (a literal of the address the system picks). */
export function ehloHtml(ehlo: string): string {
  const advice = '<span class="muted">no fully qualified name: set MAILROOM_DELIVERY_EHLO_NAME to the PTR name of the sending address (many receivers distrust an address literal)</span>';
  if (!ehlo) return `<span class="muted">the source address literal;</span> ${advice}`;
  return isAddressLiteral(ehlo) ? `<code>${escapeHtml(ehlo)}</code> ${advice}` : `<code>${escapeHtml(ehlo)}</code>`;
}

function statusHtml(s: GetStatusResponse, workspaceId: string): string {
  const mode = modeOf(s);
  const facts: Array<[string, string]> = [
    ["Mode", escapeHtml(MODES[mode] ?? mode)],
    ...(mode === "direct" || s.routes.some((r) => r.kind === "direct")
      ? ([
        ["EHLO name", ehloHtml(s.ehloName)],
        ["Source address", s.localAddress ? `<code>${escapeHtml(s.localAddress)}</code>` : '<span class="muted">the host’s default (set MAILROOM_DELIVERY_LOCAL_ADDRESS to choose one and check its DNS)</span>'],
      ] as Array<[string, string]>)
      : []),
    [`In flight (${ALL_WORKSPACES})`, num(s.inFlight)],
    [`Sent / deferred / bounced / failed (${ALL_WORKSPACES})`, `${num(s.sentTotal)} / ${num(s.deferredTotal)} / ${num(s.bouncedTotal)} / ${num(s.failedTotal)}`],
    ["Process", `<code>${escapeHtml(s.processId || "—")}</code>`],
  ];
  const table = s.routes.length
    ? `<div class="table-wrap"><table class="data stack" id="routes"><caption class="sr-only">Delivery routes and their health</caption>
<thead><tr><th scope="col">Route</th><th scope="col">Target</th><th scope="col">Carries</th><th scope="col">Health</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Deferred</th><th scope="col" class="num">Bounced</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Latency</th></tr></thead>
<tbody>${s.routes.map((r) => routeRow(r, workspaceId)).join("")}</tbody></table></div>`
    : `<p class="card" id="routes">This delivery process reports no routes${s.relay ? `; it sends through <code>${escapeHtml(s.relay)}</code>` : ""}.</p>`;
  return `<div class="card"><table class="data" id="delivery-facts"><tbody>${facts.map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`).join("")}</tbody></table></div>
<h2>Routes</h2>${table}
<p class="muted" id="counters-scope">Counters and health are those of the delivery process that answered, since it started: every workspace's mail together, not this workspace's alone. A route that refuses connections or answers 4xx to everything is marked down for a while and its traffic moves to the others.</p>`;
}

export function registerDeliveryPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  scope.get("/delivery", async (request, reply) => {
    const session = sessionOf(request);
    const { status, error } = await deliveryStatus(deps, request);
    const body = `<h1>Delivery</h1>${status
      ? statusHtml(status, session.workspaceId)
      : `<p class="flash error" role="alert">The delivery service did not answer: ${escapeHtml(error ?? "")}</p>`}`;
    return reply.type("text/html; charset=utf-8").send(consolePage({ title: "Delivery", session, active: "delivery", flash: request.consoleFlash, body }));
  });
}
