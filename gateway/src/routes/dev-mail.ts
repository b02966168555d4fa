import { timestampDate } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import { rpcOptions } from "../deps.js";
import { apiErrorSchema } from "../errors.js";
import { LINK_ROUTES } from "@mailroom/content/urls.js";
import { defineRoute, type RouteModule } from "./route.js";
import { escapeHtml as escape, page } from "./page.js";

/** The http(s) links of a message's HTML, in order, once each: the viewer lists them under the message. */
function linksOf(html: string): string[] {
  const hrefs = [...html.matchAll(/<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')/gi)].map((m) => decodeEntities(m[1] ?? m[2]));
  return [...new Set(hrefs.filter((h) => /^https?:/i.test(h)))];
}

const decodeEntities = (s: string) =>
  s.replace(/&(?:amp|#38|#x26);/gi, "&").replace(/&(?:quot|#34);/gi, '"').replace(/&(?:#39|apos);/gi, "'").replace(/&lt;/gi, "<").replace(/&gt;/gi, ">");

/** "/t/o/": the path every open-pixel URL starts with after the public URL. */
const OPEN_PATH = LINK_ROUTES.open.slice(0, LINK_ROUTES.open.indexOf(":"));
/** An open-pixel URL (any public URL, the recipient token after the path) in HTML or CSS. */
const OPEN_PIXEL_URL = new RegExp(`https?://[^\\s"'()<>]*?${OPEN_PATH.replace(/\//g, "\\/")}[A-Za-z0-9_.~%-]+`, "gi");
/** A transparent 1×1 GIF: what the pixel shows, loaded from nowhere. */
const BLANK_GIF = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

/**
 * The message's HTML without its open pixel (the `<img>` or the CSS beacon): looking at a
 * captured message is not the recipient opening it, so it must not count as an open.
 * Links stay the tracked links as sent (following one counts a click, as it would).
 */
export function withoutOpenPixel(html: string): string {
  return html.replace(OPEN_PIXEL_URL, BLANK_GIF);
}

/**
 * The message's HTML for a sandboxed frame: no scripts, no access to this page; links
 * open in a new tab (a frame cannot navigate the viewer); no open pixel.
 */
const framed = (html: string) => `<base target="_blank">${withoutOpenPixel(html)}`;

/** Every /dev/mail page starts with the way back to the console. */
const CONSOLE_LINK = `<nav aria-label="Development"><a href="/console">Console</a> · <a href="/dev/mail">Captured mail</a></nav>`;

const htmlPage = (description: string) => ({ description, content: { "text/html": z.string() } });
const capturedId = z.object({ id: z.string() });

/**
 * Locally captured mail (delivery in capture mode: no relay, routes or direct mode): a small inbox at /dev/mail for development.
 * It is only mounted while capturing and while the gateway listens on loopback.
 */
export const registerDevMail: RouteModule = (app, deps) => {
  // Captured mail spans every workspace: only serve it on a loopback-bound gateway.
  const loopback = ["127.0.0.1", "localhost", "::1"].includes(deps.httpHost ?? "127.0.0.1");
  if (!deps.capturesMail || !loopback) return;

  defineRoute(app, {
    method: "GET",
    url: "/dev/mail",
    operationId: "devMailList",
    tags: ["Development"],
    summary: "Captured mail (development only)",
    description: "Mounted only when delivery captures mail locally (`MAILROOM_DELIVERY_MODE=capture`, the default without `MAILROOM_SMTP_URL` or `MAILROOM_DELIVERY_ROUTES`): an HTML list of the last 200 messages of every workspace. No API key: keep the gateway on loopback when capturing.",
    responses: { 200: htmlPage("HTML page."), 503: "ServiceUnavailable" },
    handler: async (request, reply) => {
      const { messages } = await deps.clients.delivery.listCapturedMessages({ limit: 200 }, rpcOptions(request));
      const items = messages
        .map((m) => `<li><a href="/dev/mail/${encodeURIComponent(m.id)}">${escape(m.subject || "(no subject)")}</a>
<div class="muted">From ${escape(m.from)} to ${escape(m.to)}${m.capturedAt ? ` · <time datetime="${escape(timestampDate(m.capturedAt).toISOString())}">${escape(timestampDate(m.capturedAt).toISOString().replace("T", " ").slice(0, 19))} UTC</time>` : ""}</div></li>`)
        .join("\n");
      const list = messages.length ? `<ul class="mail">${items}</ul>` : `<p class="notice">No mail captured yet. Send an email through the API and reload.</p>`;
      return reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page("Captured mail", `${CONSOLE_LINK}<h1>Captured mail</h1>
<p class="muted">${messages.length} message(s), newest first. Captured locally: nothing was sent.</p>
${list}`, { width: "60rem" }));
    },
  });

  const messageErrors = {
    400: { description: "`invalid_id`: not a captured message id.", body: apiErrorSchema },
    404: { description: "`captured_message_not_found`.", body: apiErrorSchema },
    503: "ServiceUnavailable",
  } as const;

  defineRoute(app, {
    method: "GET",
    url: "/dev/mail/:id",
    operationId: "devMailMessage",
    tags: ["Development"],
    summary: "One captured message (development only)",
    params: capturedId,
    responses: { 200: htmlPage("HTML page with the message."), ...messageErrors },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.delivery.getCapturedMessage({ id: params.id }, rpcOptions(request));
      const m = res.message!;
      const links = linksOf(res.html);
      const linkList = links.length
        ? `<h2>Links</h2><ul>${links.map((href) => `<li><a href="${escape(href)}">${escape(href)}</a></li>`).join("")}</ul>`
        : "";
      const body = res.html
        ? `<h2>HTML</h2><iframe title="HTML body of the message" sandbox="allow-popups allow-popups-to-escape-sandbox" srcdoc="${escape(framed(res.html))}"></iframe>`
        : "";
      return reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page(m.subject || "(no subject)", `${CONSOLE_LINK}<p><a href="/dev/mail">← All captured mail</a></p>
<h1>${escape(m.subject || "(no subject)")}</h1>
<p class="muted">From ${escape(m.from)} to ${escape(m.to)} · <a href="/dev/mail/${encodeURIComponent(m.id)}/raw">Raw source</a></p>
${res.html ? `<p class="muted">The open pixel is left out here: viewing a message counts no open. Its links are the tracked links as sent.</p>` : ""}${body}${linkList}<h2>Plain text</h2><pre>${escape(res.text)}</pre>`, { width: "60rem" }));
    },
  });

  defineRoute(app, {
    method: "GET",
    url: "/dev/mail/:id/raw",
    operationId: "devMailRaw",
    tags: ["Development"],
    summary: "Raw RFC 5322 source of one captured message (development only)",
    params: capturedId,
    responses: { 200: { description: "The message source.", content: { "text/plain": z.string() } }, ...messageErrors },
    handler: async (request, reply, { params }) => {
      const res = await deps.clients.delivery.getCapturedMessage({ id: params.id }, rpcOptions(request));
      return reply.type("text/plain; charset=utf-8").send(Buffer.from(res.raw));
    },
  });
};
