import { describe, expect, it } from "vitest";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { LightMyRequestResponse } from "fastify";
import { SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { CONCERNS, type Call, type Document, METHODS, SECRET, TEST_CALL, app, call, capturedCleared, capturedQueries, checkResponse, componentValidator, contactsClient, doc, drivenElsewhere, events, expectDriven, linkToken, operation, recipient, recipientToken, resolveResponse, templateToFastify, templatedEmail, useOpenApiGateway, validatorFor } from "./openapi-test-support.js";

/**
 * The OpenAPI document (generated from the routes' zod schemas, served at /openapi.json) against
 * the gateway: real responses validate against the documented schemas for their status.
 * This file: the document, recipient links, health and development routes; the gateway and the checks are in openapi-test-support.ts.
 */

describe("the generated OpenAPI document against the gateway: the document, recipient links, health and development routes", () => {
  useOpenApiGateway();

  describe("routes", () => {
    /** Method and path of every route in the router, from fastify's own listing. */
    function registeredRoutes(): Set<string> {
      const routes = new Set<string>();
      const stack: string[] = [];
      for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
        const m = /^([│├└─ ]*)(\S.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
        if (!m) continue;
        const depth = m[1].length / 4 - 1;
        stack.length = depth;
        stack.push(m[2]);
        const url = stack.join("");
        for (const method of m[3]?.split(", ") ?? []) {
          // HEAD is fastify's automatic twin of every GET.
          if (method !== "HEAD") routes.add(`${method} ${url}`);
        }
      }
      return routes;
    }

    const documented = () =>
      new Set(Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item).filter((k) => METHODS.includes(k)).map((m) => `${m.toUpperCase()} ${templateToFastify(path)}`)));

    it("lists every registered route in the document", () => {
      const registered = registeredRoutes();
      for (const route of registered) {
        const [method, url] = route.split(" ");
        expect(app.hasRoute({ method: method as "GET", url }), `parsed route ${route}`).toBe(true);
      }
      expect(registered.size).toBeGreaterThan(20);
      // The web console (/console) serves HTML pages, not API operations: never in the document.
      const api = [...registered].filter((r) => !r.split(" ")[1].startsWith("/console"));
      expect(api.filter((r) => !documented().has(r)), "registered but not documented").toEqual([]);
      expect([...documented()].filter((r) => r.split(" ")[1].startsWith("/console")), "console routes documented").toEqual([]);
    });

    it("registers every documented operation", () => {
      const missing = [...documented()].filter((route) => {
        const [method, url] = route.split(" ");
        return !app.hasRoute({ method: method as "GET", url });
      });
      expect(missing, "documented but not registered").toEqual([]);
    });

    it("is a well-formed OpenAPI 3.1 document", () => {
      expect(doc.openapi).toMatch(/^3\.1\./);
      const ids = new Set<string>();
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          expect(METHODS, `${path}: ${method}`).toContain(method);
          expect(ids.has(o.operationId), `duplicate operationId ${o.operationId}`).toBe(false);
          ids.add(o.operationId);
          // Every path parameter is declared, and every /v1 operation needs the key.
          const declared = ((o as { parameters?: Array<{ name: string; in: string }> }).parameters ?? []).filter((p) => p.in === "path").map((p) => p.name);
          expect(declared.sort(), `${method} ${path} parameters`).toEqual([...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]).sort());
          expect(o.security === undefined, `${method} ${path} security`).toBe(path.startsWith("/v1/"));
          for (const [status, r] of Object.entries(o.responses)) {
            expect(status, `${method} ${path}`).toMatch(/^[1-5]\d\d$/);
            const { response } = resolveResponse(r);
            expect(response.description).toBeTruthy();
            for (const media of Object.values(response.content ?? {})) if (media.schema) validatorFor(media.schema);
          }
          for (const media of Object.values(o.requestBody?.content ?? {})) if (media.schema) validatorFor(media.schema);
        }
      }
      // The broadcast endpoints (their responses are checked in routes/broadcasts.test.ts).
      expect(Object.keys(doc.paths).filter((p) => p.includes("broadcast") && !p.endsWith("/stats")).sort()).toEqual([
        "/v1/broadcasts", "/v1/broadcasts/{id}", "/v1/broadcasts/{id}/ab/winner", "/v1/broadcasts/{id}/cancel", "/v1/broadcasts/{id}/check", "/v1/broadcasts/{id}/schedule", "/v1/broadcasts/{id}/test",
      ]);
    });

    it("is served at GET /openapi.json without a key, naming this gateway", async () => {
      const res = await call("GET /openapi.json");
      expect(res.statusCode).toBe(200);
      const served = res.json() as Document & { servers: Array<{ url: string }> };
      expect(served.paths).toEqual(doc.paths);
      expect(served.servers).toEqual([{ url: loadConfig({}).publicUrl }]);
    });
  });

  describe("recipient links, health and development routes", () => {
    it("serves the open pixel, click redirect and unsubscribe as documented", async () => {
      expect((await call("GET /t/o/{token}", { url: `/t/o/${recipientToken}` })).statusCode).toBe(200);
      expect((await call("GET /t/o/{token}", { url: "/t/o/forged" })).statusCode).toBe(404);
      const click = await call("GET /t/c/{link}/{token}", { url: `/t/c/${linkToken}/${recipientToken}` });
      expect(click.headers.location).toBe("https://acme.test/pricing?plan=pro");
      expect((await call("GET /t/c/{link}/{token}", { url: `/t/c/${linkToken}/forged` })).statusCode).toBe(404);
      expect((await call("GET /u/{token}", { url: `/u/${recipientToken}?manage=1` })).statusCode).toBe(200);
      expect((await call("GET /u/{token}", { url: "/u/forged" })).statusCode).toBe(404);
      const oneClick = await call("POST /u/{token}", { url: `/u/${recipientToken}`, payload: "List-Unsubscribe=One-Click", contentType: "application/x-www-form-urlencoded" });
      expect(oneClick.json()).toEqual({ unsubscribed: true });
      const button = await call("POST /u/{token}", { url: `/u/${recipientToken}`, headers: { accept: "text/html" } });
      expect(button.headers["content-type"]).toMatch(/^text\/html/);
      expect((await call("POST /u/{token}", { url: "/u/forged" })).statusCode).toBe(404);
      expect(events.length).toBeGreaterThanOrEqual(3);

      const resubscribe = `/u/${recipientToken}/resubscribe`;
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe, headers: { origin: "https://evil.test" } })).statusCode).toBe(403);
      const page = await call("POST /u/{token}/resubscribe", { url: resubscribe, headers: { accept: "text/html" } });
      expect(page.headers["content-type"]).toMatch(/^text\/html/);
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe })).json()).toEqual({ subscribed: true });
      expect((await call("POST /u/{token}/resubscribe", { url: "/u/forged/resubscribe" })).statusCode).toBe(404);
      await contactsClient.addSuppression({ workspaceId: "ws_oa", email: recipient.email, reason: SuppressionReason.HARD_BOUNCE }, TEST_CALL);
      expect((await call("POST /u/{token}/resubscribe", { url: resubscribe })).json()).toMatchObject({ statusCode: 409, code: "conflict" });
      await contactsClient.removeSuppression({ workspaceId: "ws_oa", email: recipient.email }, TEST_CALL);
    });

    it("serves health and the captured-mail pages", async () => {
      expect((await call("GET /healthz")).json()).toEqual({ ok: true });
      const inbox = await call("GET /dev/mail");
      expect(inbox.body).toContain("cap_1");
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/cap_1" })).statusCode).toBe(200);
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/cap_9" })).statusCode).toBe(404);
      expect((await call("GET /dev/mail/{id}", { url: "/dev/mail/bad%20id" })).statusCode).toBe(400);
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/cap_1/raw" })).body).toContain("Subject: Hello");
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/cap_9/raw" })).statusCode).toBe(404);
      expect((await call("GET /dev/mail/{id}/raw", { url: "/dev/mail/bad%20id/raw" })).statusCode).toBe(400);
    });

    it("receives webhooks at /dev/webhooks/<name> and lists them, newest first", async () => {
      expect((await call("GET /dev/webhooks")).body).toContain("Nothing received yet");
      const body = JSON.stringify({ type: "EMAIL_DELIVERED", timestamp: "2030-01-01T00:00:00.000Z", data: { subject: "<b>hi</b>" } });
      const got = await call("POST /dev/webhooks/{name}", { url: "/dev/webhooks/readme", payload: body, contentType: "application/json",
        headers: { "webhook-id": "msg_1", "webhook-signature": "v1,abc" } });
      expect(got.statusCode).toBe(204);
      await call("POST /dev/webhooks/{name}", { url: "/dev/webhooks/other", payload: "not json", contentType: "text/plain" });
      const list = (await call("GET /dev/webhooks")).body;
      expect(list.indexOf("(no event type)")).toBeLessThan(list.indexOf("EMAIL_DELIVERED"));
      expect(list).toContain("webhook-id: msg_1");
      expect(list).toContain("webhook-signature: v1,abc");
      expect(list).toContain("&#60;b&#62;hi&#60;/b&#62;");
      expect(list).not.toContain("<b>hi</b>");
      expect((await app.inject({ method: "POST", url: "/dev/webhooks/bad%20name", payload: "{}" })).statusCode).toBe(400);
    });

    it("searches and pages the captured mail, and clears it only with the page's token", async () => {
      capturedQueries.length = 0;
      const first = await call("GET /dev/mail", { url: "/dev/mail?q=%20Hello%20" });
      expect(capturedQueries.at(-1)).toEqual({ query: "Hello", cursor: "", limit: 50 });
      expect(first.body).toContain('value="Hello"');
      expect(first.body).toContain('href="/dev/mail?q=Hello&#38;cursor=cap_1"');
      const older = await call("GET /dev/mail", { url: "/dev/mail?q=Hello&cursor=cap_1" });
      expect(capturedQueries.at(-1)).toEqual({ query: "Hello", cursor: "cap_1", limit: 50 });
      expect(older.body).not.toContain("Older messages");
      expect((await call("GET /dev/mail", { url: "/dev/mail?cursor=..%2Fx" })).statusCode).toBe(400);
      expect((await call("GET /dev/mail", { url: `/dev/mail?q=${"x".repeat(201)}` })).statusCode).toBe(400);

      // The Clear form: its token is bound to the cookie the page set.
      const cookie = /mr_dev_mail=([^;]+)/.exec(String(first.headers["set-cookie"]))![1];
      const token = /name="_csrf" value="([^"]+)"/.exec(first.body)![1];
      const form = (t: string) => `_csrf=${encodeURIComponent(t)}`;
      const clear = (c: Call) => call("POST /dev/mail/clear", { contentType: "application/x-www-form-urlencoded", ...c });
      const before = capturedCleared;
      expect((await clear({ payload: form(token) })).statusCode).toBe(403);
      expect((await call("POST /dev/mail/clear", { headers: { cookie: `mr_dev_mail=${cookie}` } })).statusCode).toBe(403);
      expect((await clear({ payload: form("forged"), headers: { cookie: `mr_dev_mail=${cookie}` } })).statusCode).toBe(403);
      expect((await clear({ payload: form(token), headers: { cookie: `mr_dev_mail=${cookie}`, origin: "https://evil.test" } })).statusCode).toBe(403);
      expect((await clear({ payload: form(token), headers: { cookie: `mr_dev_mail=${cookie}`, "sec-fetch-site": "cross-site" } })).statusCode).toBe(403);
      expect(capturedCleared).toBe(before);
      const done = await clear({ payload: form(token), headers: { cookie: `other=1; mr_dev_mail=${cookie}`, "sec-fetch-site": "same-origin" } });
      expect(done.statusCode).toBe(303);
      expect(done.headers.location).toBe("/dev/mail");
      expect(capturedCleared).toBe(before + 1);
    });
  });

  it("serves metrics (behind MAILROOM_METRICS_TOKEN when set) and readiness", async () => {
    // Stand-ins for the services the gateway's /readyz asks: one answering, one port nothing listens on.
    const healthy = http.createServer((_req, res) => res.end('{"ok":true}'));
    await new Promise<void>((resolve) => healthy.listen(0, "127.0.0.1", resolve));
    const up = `http://127.0.0.1:${(healthy.address() as AddressInfo).port}`;
    const base = loadConfig({});
    const gatewayWith = (urls: string, metricsToken?: string) =>
      buildGateway({
        config: { ...base, secret: SECRET, metricsToken, urls: Object.fromEntries(Object.keys(base.urls).map((name) => [name, urls])) as typeof base.urls },
        logger: createLogger("gateway-openapi-test", "silent"),
        clients: {} as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 0,
      });
    const operated = await gatewayWith(up, "scrape-token");
    const unready = await gatewayWith("http://127.0.0.1:1");
    try {
      expect((await call("GET /metrics", {}, unready)).body).toContain("mailroom_http_requests_total");
      expect((await call("GET /metrics", {}, operated)).statusCode).toBe(401);
      expect((await call("GET /metrics", { headers: { authorization: "Bearer scrape-token" } }, operated)).body).toContain("process_cpu_seconds_total");
      expect((await call("GET /readyz", {}, operated)).json()).toMatchObject({ ok: true, checks: { accounts: "ok", audience: "ok", email: "ok" } });
      const down = await call("GET /readyz", {}, unready);
      expect(down.statusCode).toBe(503);
      expect(down.json().checks.accounts).toMatch(/unreachable/);
      expect(down.json().checks.audience).toMatch(/unreachable/);
    } finally {
      await Promise.all([operated.close(), unready.close()]);
      healthy.close();
    }
  });

  describe("the checks themselves", () => {
    it("fail on a missing required field, an undocumented field or a wrong error shape", async () => {
      const res = await call("POST /v1/emails", { body: templatedEmail });
      const ok = operation("POST /v1/emails").operation.responses["200"].content!["application/json"].schema!;
      const v = validatorFor(ok);
      const { email } = res.json();
      expect(v({ email })).toBe(true);
      const { messageId: _messageId, ...withoutMessageId } = email;
      expect(v({ email: withoutMessageId })).toBe(false);
      const { template: _template, ...withoutTemplate } = email;
      expect(v({ email: withoutTemplate })).toBe(false);
      expect(v({ email: { ...email, from: "hello@acme.test" } })).toBe(false);
      expect(v({ email: { ...email, status: "QUEUED" } })).toBe(false);
      expect(v(email)).toBe(false);
      expect(() => checkResponse("POST /v1/emails", "/v1/emails", { ...res, json: () => ({ email: withoutMessageId }) } as LightMyRequestResponse)).toThrow(/messageId/);
      expect(() => checkResponse("GET /v1/emails/{id}", "/v1/emails/x", { ...res, statusCode: 418 } as LightMyRequestResponse)).toThrow(/does not list/);

      const invalidPayload = componentValidator("InvalidPayloadError");
      const body = { statusCode: 400, error: "Bad Request", code: "invalid_payload", message: "m", docsUrl: "http://localhost:8080/docs/errors/invalid_payload" };
      expect(invalidPayload(body)).toBe(true);
      expect(invalidPayload({ ...body, docsUrl: undefined })).toBe(false);
      expect(invalidPayload({ ...body, code: undefined })).toBe(false);
      expect(invalidPayload({ ...body, code: "invalid_request" })).toBe(false);
      expect(componentValidator("ApiError")({ statusCode: 404, error: "Not Found", message: "m" })).toBe(false);
    });

  });

  describe("the split by concern", () => {
    it("gives every documented path one file and every shared response a driver", () => {
      const owners = (p: string) => Object.entries(CONCERNS).filter(([, c]) => c.paths(p)).map(([name]) => name);
      const paths = Object.keys(doc.paths).filter((p) => !drivenElsewhere(p));
      expect(paths.filter((p) => owners(p).length !== 1).map((p) => `${p}: ${owners(p).join(", ") || "none"}`)).toEqual([]);
      expect(Object.values(CONCERNS).flatMap((c) => c.shared).sort()).toEqual(Object.keys(doc.components.responses).sort());
    });
  });

  it("drove every documented response of its concern through the gateway", () => expectDriven("document"));
});
