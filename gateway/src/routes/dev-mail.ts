import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { RouteModule } from "./index.js";
import { replyWithError } from "../errors.js";

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;width:100%}
td,th{padding:.4rem .6rem;border-bottom:1px solid #eee;text-align:left}a{color:#2456d3}pre{white-space:pre-wrap;background:#f6f6f6;padding:1rem}
iframe{width:100%;height:60vh;border:1px solid #ddd}</style></head><body>${body}</body></html>`;

/**
 * Locally captured mail (no MAILROOM_SMTP_URL): a small inbox at /dev/mail for development.
 * It is only mounted while capturing and while the gateway listens on loopback.
 */
export const registerDevMail: RouteModule = (app, deps) => {
  // Captured mail spans every workspace: only serve it on a loopback-bound gateway.
  const loopback = ["127.0.0.1", "localhost", "::1"].includes(deps.config.httpHost);
  if (deps.config.smtpUrl || !loopback) return;

  app.get("/dev/mail", async (request, reply) => {
    try {
      const { messages } = await deps.clients.delivery.listCapturedMessages({ limit: 200 });
      const rows = messages
        .map((m) => `<tr><td>${m.capturedAt ? escape(timestampDate(m.capturedAt).toISOString()) : ""}</td><td>${escape(m.from)}</td>
<td>${escape(m.to)}</td><td><a href="/dev/mail/${encodeURIComponent(m.id)}">${escape(m.subject || "(no subject)")}</a></td></tr>`)
        .join("");
      return reply.type("text/html").send(page("Captured mail", `<h1>Captured mail</h1><p>${messages.length} message(s), newest first.</p>
<table><tr><th>Captured</th><th>From</th><th>To</th><th>Subject</th></tr>${rows}</table>`));
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.get<{ Params: { id: string } }>("/dev/mail/:id", async (request, reply) => {
    try {
      const res = await deps.clients.delivery.getCapturedMessage({ id: request.params.id });
      const m = res.message!;
      const srcdoc = escape(res.html || `<pre>${escape(res.text)}</pre>`);
      return reply.type("text/html").send(page(m.subject, `<p><a href="/dev/mail">← all mail</a></p><h1>${escape(m.subject)}</h1>
<p>From ${escape(m.from)} to ${escape(m.to)} · <a href="/dev/mail/${encodeURIComponent(m.id)}/raw">raw source</a></p>
<iframe sandbox srcdoc="${srcdoc}"></iframe><h2>Plain text</h2><pre>${escape(res.text)}</pre>`));
    } catch (err) {
      return replyWithError(reply, err);
    }
  });

  app.get<{ Params: { id: string } }>("/dev/mail/:id/raw", async (request, reply) => {
    try {
      const res = await deps.clients.delivery.getCapturedMessage({ id: request.params.id });
      return reply.type("text/plain; charset=utf-8").send(Buffer.from(res.raw));
    } catch (err) {
      return replyWithError(reply, err);
    }
  });
};
