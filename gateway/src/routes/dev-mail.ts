import { randomBytes } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { CSRF_FIELD, assertSameSite, doubleSubmitMatches, doubleSubmitToken } from "@mailroom/console/csrf.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { apiErrorSchema, refusal } from "@mailroom/http/errors.js";
import { LINK_ROUTES } from "@mailroom/content/urls.js";
import { defineRoute, type RouteModule } from "./route.js";
import { escapeHtml as escape, page } from "@mailroom/http/page.js";

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
const CONSOLE_LINK = `<nav aria-label="Development"><a href="/console">Console</a> · <a href="/dev/mail">Captured mail</a> · <a href="/dev/webhooks">Received webhooks</a></nav>`;

const htmlPage = (description: string) => ({ description, content: { "text/html": z.string() } });

/** Messages a page of the inbox lists. */
const PAGE_SIZE = 50;
const CLEAR_COOKIE = "mr_dev_mail";
const CSRF_PURPOSE = "dev-mail-clear";
const listQuery = z.strictObject({
  q: z.string().max(200).optional().meta({ description: "Text the subject or the recipient contains (case-insensitive)." }),
  cursor: z.string().max(100).optional().meta({ description: "The page's “Older messages” link: the messages older than this one." }),
});
const clearBody = z.object({ [CSRF_FIELD]: z.string().max(200).optional() }).optional();

/** One cookie of the request (this route is outside the console's cookie plugin). */
function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie ?? "";
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
const capturedId = z.object({ id: z.string() });

/**
 * Locally captured mail (delivery in capture mode: no relay, routes or direct mode): a small inbox at /dev/mail for development.
 * It is only mounted while capturing and while the gateway listens on loopback.
 */
export const registerDevMail: RouteModule = (app, deps) => {
  // Captured mail spans every workspace: only serve it on a loopback-bound gateway.
  const loopback = ["127.0.0.1", "localhost", "::1"].includes(deps.httpHost ?? "127.0.0.1");
  if (!deps.capturesMail || !loopback) return;

  app.register(async (scope) => {
    // The Clear button's form; the body is small (the CSRF token).
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 4096 }, (_req, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))));

    defineRoute(scope, {
      method: "GET",
      url: "/dev/mail",
      operationId: "devMailList",
      tags: ["Development"],
      summary: "Captured mail (development only)",
      description: `Mounted only when delivery captures mail locally (\`MAILROOM_DELIVERY_MODE=capture\`, the default without \`MAILROOM_SMTP_URL\` or \`MAILROOM_DELIVERY_ROUTES\`): an HTML list of the messages of every workspace, newest first, ${PAGE_SIZE} a page, searchable by subject or recipient. No API key: keep the gateway on loopback when capturing.`,
      query: listQuery,
      responses: {
        200: htmlPage("HTML page."),
        400: { description: "`invalid_request`: `q` longer than 200 characters; `invalid_cursor`: not a cursor this page gave.", body: apiErrorSchema },
        503: "ServiceUnavailable",
      },
      handler: async (request, reply, { query }) => {
        const q = query.q?.trim() ?? "";
        const res = await deps.clients.delivery.listCapturedMessages({ limit: PAGE_SIZE, query: q, cursor: query.cursor ?? "" }, rpcOptions(request));
        const { messages } = res;
        const items = messages
          .map((m) => `<li><a href="/dev/mail/${encodeURIComponent(m.id)}">${escape(m.subject || "(no subject)")}</a>
<div class="muted">From ${escape(m.from)} to ${escape(m.to)}${m.capturedAt ? ` · <time datetime="${escape(timestampDate(m.capturedAt).toISOString())}">${escape(timestampDate(m.capturedAt).toISOString().replace("T", " ").slice(0, 19))} UTC</time>` : ""}</div></li>`)
          .join("\n");
        const empty = q
          ? `<p class="notice">No captured message has “${escape(q)}” in its subject or recipient. <a href="/dev/mail">Show all</a></p>`
          : query.cursor ? `<p class="notice">No older messages. <a href="/dev/mail">Newest</a></p>`
          : `<p class="notice">No mail captured yet. Send an email through the API and reload.</p>`;
        const list = messages.length ? `<ul class="mail">${items}</ul>` : empty;
        const older = res.nextCursor ? `<p><a rel="next" href="${escape(`/dev/mail?${new URLSearchParams({ ...(q ? { q } : {}), cursor: res.nextCursor })}`)}">Older messages →</a></p>` : "";
        const what = q ? `matching “${escape(q)}”` : "newest first";
        const summary = `${messages.length} message(s) ${what}${query.cursor ? ` (older page; <a href="${escape(`/dev/mail${q ? `?${new URLSearchParams({ q })}` : ""}`)}">newest</a>)` : ""}. Captured locally: nothing was sent.`;
        const search = `<form method="get" action="/dev/mail" role="search" style="display:flex;gap:.5rem;flex-wrap:wrap;align-items:center">
<label for="q">Search subject or recipient</label><input id="q" name="q" type="search" maxlength="200" value="${escape(q)}" style="flex:1 1 12rem">
<button type="submit" class="secondary">Search</button></form>`;
        const token = clearToken(request, reply);
        const clear = `<form method="post" action="/dev/mail/clear" onsubmit="return confirm('Forget every captured message?')"><input type="hidden" name="${CSRF_FIELD}" value="${escape(token)}"><button type="submit" class="secondary">Clear captured mail</button></form>`;
        return reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page("Captured mail", `${CONSOLE_LINK}<h1>Captured mail</h1>
${search}
<p class="muted" role="status">${summary}</p>
${list}${older}${messages.length || query.cursor ? clear : ""}`, { width: "60rem" }));
      },
    });

    defineRoute(scope, {
      method: "POST",
      url: "/dev/mail/clear",
      operationId: "devMailClear",
      tags: ["Development"],
      summary: "Forget every captured message (development only)",
      description: "The inbox's Clear button: a form post carrying the token the page gave (a cookie-bound double submit; a browser must say the form came from this site). Redirects to /dev/mail.",
      body: clearBody,
      responses: {
        303: { description: "Cleared: back to /dev/mail." },
        403: { description: "`forbidden`: the token is missing or not the page's, or the form came from another site.", body: apiErrorSchema },
        503: "ServiceUnavailable",
      },
      handler: async (request, reply, { body }) => {
        assertSameSite(request, deps.config.publicUrl);
        if (!doubleSubmitMatches(deps.config.secret, CSRF_PURPOSE, cookieOf(request, CLEAR_COOKIE), body?.[CSRF_FIELD])) {
          throw refusal({ code: "forbidden", status: 403, message: "The form expired or did not come from this page. Reload /dev/mail and try again." });
        }
        await deps.clients.delivery.clearCapturedMessages({}, rpcOptions(request));
        return reply.code(303).header("location", "/dev/mail").send();
      },
    });
  });

  /** The Clear form's token, for a random cookie set once (path /dev/mail, strict same-site). */
  const clearToken = (request: FastifyRequest, reply: FastifyReply): string => {
    let cookie = cookieOf(request, CLEAR_COOKIE);
    if (!cookie || !/^[A-Za-z0-9_-]{22,64}$/.test(cookie)) {
      cookie = randomBytes(18).toString("base64url");
      reply.header("set-cookie", `${CLEAR_COOKIE}=${cookie}; Path=/dev/mail; HttpOnly; SameSite=Strict`);
    }
    return doubleSubmitToken(deps.config.secret, CSRF_PURPOSE, cookie);
  };

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
