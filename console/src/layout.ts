/**
 * The console's page shell. API for page modules (console/*.ts):
 *
 *   consolePage({ title, session, active, body, flash? }): string
 *       A whole HTML document: skip link, header with the workspace name, the nav
 *       (Overview/Stats, Domains, Inbound, Emails, Received, Templates, Broadcasts, Contacts, Suppressions, Groups, Segments, Topics, Forms,
 *       Automations, Webhooks, Delivery (owners and admins), API keys, Team, Audit log (owners and admins),
 *       Settings, Sessions, Sign out as a CSRF-protected POST), an optional flash message, then `body`
 *       inside <main>. A link shows only when the session may open its page (the GET's rule in
 *       roles.ts, the one place), so no link leads to a 403.
 *       `body` is trusted HTML: a view's render(html`…`) (views/html.ts), or escape every value with escapeHtml.
 *   plainPage({ title, body, status? }): string   a page without nav (sign-in, errors).
 *   ConsoleNav        the nav keys; `active` marks the current one (aria-current="page").
 *   Flash             { kind: "ok" | "error"; message } (plain text, escaped here).
 *   escapeHtml, formatTime(date?), timeText(date), statusBadge(text, tone), consoleUrl(path, query?)
 *   statusWords(text)  an enum name as words ("IN_PROGRESS" → "In progress"); statusBadge applies it.
 *
 * The shell's markup is views/layout.ts (hono/html); this module decides what it shows.
 *
 * Below 48rem the nav folds behind a "Menu" toggle (a checkbox and its label: CSS only, no
 * script), so the header stays two rows on a phone; every link is one tap away.
 *
 * Conventions: no external assets, no build step, no framework. Forms POST with
 * csrfField(session) (csrf.ts) and answer 303 with setFlash (session.ts). Inline JS is only
 * progressive enhancement (copy buttons, `data-confirm`); every page works without it.
 * Long tokens (ids, URLs, addresses) in <code> wrap anywhere; normal text wraps only between
 * words (a word longer than the line still breaks). code.value.one-line keeps a token whole and
 * scrolls it in its own box (DNS names).
 * Useful classes: .card, .grid, table.data (wrap in .table-wrap for phone width),
 * .badge.ok|.warn|.bad|.info, .actions, .muted, .row (flex, wraps), .sr-only, button.secondary,
 * button.danger, button.small, ol.timeline (li.ok / li.bad), iframe.mail, svg.chart (charts: chart.ts),
 * .check (a checkbox or radio with its label beside it, also when the label wraps:
 * <div class="check"><input type="checkbox" id=…><label for=…>…</label></div>).
 * Copy buttons: <button type="button" class="secondary small" data-copy="<text>" hidden>Copy</button>
 * (hidden until the script runs, so no dead button without JS; put the text beside it too).
 */
import { escapeHtml } from "@mailroom/http/page.js";
import { csrfField } from "./csrf.js";
import { render, trusted } from "./views/html.js";
import { consoleDocument, flashView, plainDocument, type NavLink } from "./views/layout.js";
import { CONSOLE_PREFIX, type ConsoleSession, type Flash } from "./types.js";
import { consolePrincipal, mayCall } from "@mailroom/http/roles.js";

export { escapeHtml, CONSOLE_PREFIX, type Flash };

export type ConsoleNav = "overview" | "domains" | "inbound" | "emails" | "received" | "templates" | "broadcasts" | "contacts" | "suppressions" | "groups" | "segments" | "topics" | "forms" | "automations" | "webhooks" | "delivery" | "keys" | "team" | "sessions" | "audit" | "settings";

/** The nav, in order; `docs`: the page of the documentation (served at /docs/<page>) about the section. */
const NAV: Array<{ key: ConsoleNav; label: string; path: string; docs: string }> = [
  { key: "overview", label: "Overview", path: "", docs: "" },
  { key: "domains", label: "Domains", path: "/domains", docs: "delivery" },
  { key: "inbound", label: "Inbound", path: "/inbound", docs: "receiving-email" },
  { key: "emails", label: "Emails", path: "/emails", docs: "api" },
  { key: "received", label: "Received", path: "/received", docs: "receiving-email" },
  { key: "templates", label: "Templates", path: "/templates", docs: "templates" },
  { key: "broadcasts", label: "Broadcasts", path: "/broadcasts", docs: "broadcasts" },
  { key: "contacts", label: "Contacts", path: "/contacts", docs: "audiences" },
  { key: "suppressions", label: "Suppressions", path: "/suppressions", docs: "audiences" },
  { key: "groups", label: "Groups", path: "/groups", docs: "audiences" },
  { key: "segments", label: "Segments", path: "/segments", docs: "audiences" },
  { key: "topics", label: "Topics", path: "/topics", docs: "audiences" },
  { key: "forms", label: "Forms", path: "/forms", docs: "audiences" },
  { key: "automations", label: "Automations", path: "/automations", docs: "automations" },
  { key: "webhooks", label: "Webhooks", path: "/webhooks", docs: "webhooks" },
  { key: "delivery", label: "Delivery", path: "/delivery", docs: "delivery" },
  { key: "keys", label: "API keys", path: "/keys", docs: "team" },
  { key: "team", label: "Team", path: "/team", docs: "team" },
  { key: "audit", label: "Audit log", path: "/audit", docs: "team" },
  { key: "settings", label: "Settings", path: "/settings", docs: "configuration" },
  { key: "sessions", label: "Sessions", path: "/sessions", docs: "team" },
];

/** A console URL with an optional query (empty values are left out). */
export function consoleUrl(path: string, query: Record<string, string | number | undefined> = {}): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") qs.set(k, String(v));
  const s = qs.toString();
  return `${CONSOLE_PREFIX}${path}${s ? `?${s}` : ""}`;
}

/** A date as UTC text inside <time>; an em dash when absent. */
export function formatTime(date: Date | undefined): string {
  if (!date || Number.isNaN(date.getTime())) return "—";
  return `<time datetime="${date.toISOString()}">${timeText(date)}</time>`;
}

/** The plain text of formatTime, for messages: "2025-03-01 14:05 UTC" (never a raw ISO timestamp). */
export function timeText(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export type Tone = "ok" | "warn" | "bad" | "info";

/** An enum name as words: "IN_PROGRESS" → "In progress", "OPT_IN" → "Opt in"; other text as it is. */
export function statusWords(text: string): string {
  if (text.length < 3 || !/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/.test(text)) return text;
  return text[0] + text.slice(1).toLowerCase().replace(/_/g, " ");
}

/** A status pill; the text carries the meaning, the colour only repeats it. Enum names show as words. */
export function statusBadge(text: string, tone: Tone): string {
  return `<span class="badge ${tone}">${escapeHtml(statusWords(text))}</span>`;
}

export interface ConsolePageOptions {
  title: string;
  session: ConsoleSession;
  active: ConsoleNav;
  /** Trusted HTML (escape what you interpolate; a view's render(…) is). */
  body: string;
  flash?: Flash;
}

export function consolePage({ title, session, active, body, flash }: ConsolePageOptions): string {
  const principal = consolePrincipal(session);
  const links: NavLink[] = NAV.filter((n) => mayCall(principal, "GET", `${CONSOLE_PREFIX}${n.path}`))
    .map((n) => ({ href: `${CONSOLE_PREFIX}${n.path}`, label: n.label, current: n.key === active }));
  const current = NAV.find((n) => n.key === active);
  return render(consoleDocument({
    title,
    workspace: session.workspaceName || session.workspaceId,
    readOnly: !session.canEdit,
    who: session.kind === "member" ? session.memberEmail ?? "" : `key ${session.keyName || session.keyId}`,
    role: session.role,
    links,
    currentLabel: current?.label,
    // The documentation's page about this section (the index on the overview), in a new tab: the form in hand stays.
    docsHref: `/docs${current?.docs ? `/${current.docs}` : ""}`,
    signOut: trusted(csrfField(session)),
    flash: flashView(flash),
    body: trusted(body),
  }));
}

/** A page without the nav: sign-in, and errors of visitors without a session. */
export function plainPage({ title, body, flash }: { title: string; body: string; flash?: Flash }): string {
  return render(plainDocument({ title, flash: flashView(flash), body: trusted(body) }));
}
