import { z } from "zod";
import { defineRoute, type RouteModule } from "./route.js";
import { escapeHtml as escape, page } from "@mailroom/http/page.js";

/** Requests the receiver keeps (newest); older ones are forgotten. */
const KEPT = 200;
/** A webhook body larger than this is answered 413 (Mailroom's own are a few kB). */
const BODY_LIMIT = 256 * 1024;
/** The headers shown with each request: the Standard Webhooks ones and what says who sent it. */
const SHOWN_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature", "content-type", "user-agent"] as const;

interface Received {
  name: string;
  at: Date;
  headers: Partial<Record<(typeof SHOWN_HEADERS)[number], string>>;
  body: string;
}

const name = z.object({ name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).meta({ description: "Any name (letters, digits, `_`, `-`): one receiver per name, all listed together." }) });

/** A JSON body shown indented; anything else as it came. */
function pretty(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * A webhook receiver for development, beside /dev/mail: `POST /dev/webhooks/<name>` answers 204
 * to anything and keeps the last requests in memory; `GET /dev/webhooks` lists them (event type,
 * Standard Webhooks headers, body). So a webhook can be tried without an endpoint of one's own
 * (`npm start` lets webhooks target loopback). Mounted, like /dev/mail, only while delivery
 * captures mail and the gateway listens on loopback; nothing is stored on disk.
 */
export const registerDevWebhooks: RouteModule = (app, deps) => {
  const loopback = ["127.0.0.1", "localhost", "::1"].includes(deps.httpHost ?? "127.0.0.1");
  if (!deps.capturesMail || !loopback) return;
  const received: Received[] = [];

  app.register(async (scope) => {
    // Kept as sent (not parsed as the API's JSON): the receiver shows what arrived.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "string", bodyLimit: BODY_LIMIT }, (_request, body, done) => done(null, body));

    defineRoute(scope, {
      method: "POST",
      url: "/dev/webhooks/:name",
      operationId: "devWebhookReceive",
      tags: ["Development"],
      summary: "A development webhook receiver (development only)",
      description: `Answers 204 to any request and keeps the last ${KEPT} (headers and body, in memory) for \`GET /dev/webhooks\`. Point a webhook at \`http://localhost:8080/dev/webhooks/<name>\` to see its deliveries. Mounted only while mail is captured and the gateway listens on loopback.`,
      params: name,
      bodyLimit: BODY_LIMIT,
      responses: { 204: { description: "Received." } },
      handler: async (request, reply, { params }) => {
        const headers: Received["headers"] = {};
        for (const h of SHOWN_HEADERS) {
          const v = request.headers[h];
          if (typeof v === "string") headers[h] = v.slice(0, 500);
        }
        received.push({ name: params.name, at: new Date(), headers, body: typeof request.body === "string" ? request.body : "" });
        if (received.length > KEPT) received.splice(0, received.length - KEPT);
        return reply.code(204).send();
      },
    });

    defineRoute(scope, {
      method: "GET",
      url: "/dev/webhooks",
      operationId: "devWebhookList",
      tags: ["Development"],
      summary: "What the development webhook receiver got (development only)",
      description: `An HTML list of the last ${KEPT} requests to \`/dev/webhooks/<name>\`, newest first. Lost when the gateway restarts.`,
      responses: { 200: { description: "HTML page.", content: { "text/html": z.string() } } },
      handler: async (_request, reply) => {
        const items = [...received].reverse().map((r) => {
          let type = "";
          try {
            const parsed = JSON.parse(r.body) as { type?: unknown };
            if (typeof parsed?.type === "string") type = parsed.type;
          } catch { /* not JSON: no event type */ }
          const headers = SHOWN_HEADERS.filter((h) => r.headers[h]).map((h) => `${h}: ${escape(r.headers[h]!)}`).join("\n");
          return `<li data-webhook-request><strong>${escape(type || "(no event type)")}</strong> <span class="muted">to /dev/webhooks/${escape(r.name)} · <time datetime="${r.at.toISOString()}">${r.at.toISOString().replace("T", " ").slice(0, 19)} UTC</time></span>
<details><summary>Headers and body</summary><pre>${headers}\n\n${escape(pretty(r.body))}</pre></details></li>`;
        }).join("\n");
        const list = received.length
          ? `<ul class="mail">${items}</ul>`
          : `<p class="notice">Nothing received yet. Create a webhook with the URL <code>${escape(`${deps.config.publicUrl.replace(/\/$/, "")}/dev/webhooks/test`)}</code> and send it a test (<code>POST /v1/webhooks/:id/test</code>, or Send test on its console page).</p>`;
        return reply.header("cache-control", "no-store").type("text/html; charset=utf-8").send(page("Received webhooks", `<nav aria-label="Development"><a href="/console">Console</a> · <a href="/dev/mail">Captured mail</a> · <a href="/dev/webhooks">Received webhooks</a></nav><h1>Received webhooks</h1>
<p class="muted" role="status">${received.length} request(s) to <code>/dev/webhooks/&lt;name&gt;</code>, newest first (the last ${KEPT}, kept in memory until the gateway restarts). Each was answered 204.</p>
${list}`, { width: "60rem" }));
      },
    });
  });
};
