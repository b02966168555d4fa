import { describe, expect, it } from "vitest";
import { parse as parseCsv } from "csv-parse/sync";
import { KEY_B, call, componentValidator, degraded, expectDriven, inDays, rawEmail, recipient, requestIsValid, templatedEmail, useOpenApiGateway, world } from "./openapi-test-support.js";

/**
 * The OpenAPI document (generated from the routes' zod schemas, served at /openapi.json) against
 * the gateway: real responses validate against the documented schemas for their status.
 * This file: emails, outcomes, stats and webhooks; the gateway and the checks are in openapi-test-support.ts.
 */

describe("the generated OpenAPI document against the gateway: emails, outcomes, stats and webhooks", () => {
  useOpenApiGateway();

  describe("emails", () => {
    it("sends raw and templated emails in the documented envelope", async () => {
      const raw = await call("POST /v1/emails", { body: { ...rawEmail, groupBy: "onboarding", settings: { trackOpens: true } } });
      expect(raw.statusCode).toBe(200);
      expect(raw.json().email).toMatchObject({ type: "raw", status: "SENT", groupBy: "onboarding" });
      const templated = await call("POST /v1/emails", { body: templatedEmail });
      expect(templated.statusCode).toBe(200);
      expect(templated.json().email).toMatchObject({ type: "templated", template: "welcome" });
      const scheduled = await call("POST /v1/emails", { body: { ...rawEmail, sendAt: inDays(2) } });
      expect(scheduled.json().email.status).toBe("SCHEDULED");
    });

    it("documents what an email carries: cc, bcc, headers, attachments and tags in the request and every record", async () => {
      const carried = {
        cc: "Cy <cy@example.test>",
        bcc: ["bo@example.test"],
        headers: { "X-Entity-Ref-ID": "inv-1" },
        attachments: [{ filename: "a.pdf", content: Buffer.from("%PDF-1.4").toString("base64"), contentType: "application/pdf" }, { filename: "logo.png", content: "iVBORw0K", contentId: "logo" }],
        tags: [{ name: "category", value: "invoice" }],
      };
      const shown = {
        cc: [carried.cc], bcc: carried.bcc, headers: carried.headers, tags: carried.tags,
        attachments: [{ filename: "a.pdf", contentType: "application/pdf", size: 8 }, expect.objectContaining({ filename: "logo.png", size: 6, contentId: "logo" })],
      };
      const raw = await call("POST /v1/emails", { body: { ...rawEmail, ...carried } });
      expect(raw.statusCode, raw.body).toBe(200);
      expect(raw.json().email).toMatchObject(shown);
      const templated = await call("POST /v1/emails", { body: { ...templatedEmail, ...carried, sendAt: inDays(1) } });
      expect(templated.json().email).toMatchObject(shown);
      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${raw.json().email.id}` });
      expect(got.json().email).toMatchObject(shown);
      const batch = await call("POST /v1/emails/batch", { body: { emails: [{ ...rawEmail, ...carried }, { ...templatedEmail, tags: [{ name: "bad tag", value: "x" }] }] } });
      expect(batch.json().emails.successful[0]).toMatchObject(shown);
      expect(batch.json().emails.failed).toEqual([expect.objectContaining({ index: 1, code: "invalid_tags" })]);
      const listed = await call("GET /v1/emails", { url: "/v1/emails?tag=category:invoice&limit=100" });
      expect(listed.json().emails.items.map((e: { id: string }) => e.id)).toContain(raw.json().email.id);
      const stats = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?tag=category:invoice" });
      expect(stats.json().stats.tags).toEqual(["category:invoice"]);
      for (const [extra, code] of [
        [{ headers: { Subject: "x" } }, "header_not_allowed"],
        [{ attachments: [{ filename: "x.exe", content: "TVo=" }] }, "attachment_type_not_allowed"],
        [{ attachments: [{ filename: "x.txt", content: "@@" }] }, "invalid_payload"],
        [{ cc: Array.from({ length: 50 }, (_, i) => `c${i}@example.test`) }, "too_many_recipients"],
        [{ tags: [{ name: "", value: "x" }] }, "invalid_tags"],
      ] as const) {
        const res = await call("POST /v1/emails", { body: { ...rawEmail, ...extra } });
        expect(res.json(), code).toMatchObject({ statusCode: 400, code });
      }
    });

    it("accepts exactly the payloads the document accepts", async () => {
      const accepted: unknown[] = [
        rawEmail,
        { ...rawEmail, fromName: null, text: null, previewText: "Hello", replyTo: "support@acme.test", contactProperties: { plan: "pro" }, settings: null, idempotencyKey: null },
        { ...rawEmail, settings: { trackClicks: false, trackOpens: null }, sendAt: null },
        { template: "welcome", to: "cy@example.test" },
        { ...templatedEmail, variables: null, groupBy: "g1", settings: { trackClicks: true } },
      ];
      for (const body of accepted) {
        const check = requestIsValid("POST /v1/emails", body);
        expect(check.valid, `document refuses ${JSON.stringify(body)}: ${check.errors}`).toBe(true);
        const res = await call("POST /v1/emails", { body });
        expect(res.statusCode, `gateway refuses ${JSON.stringify(body)}: ${res.body}`).toBe(200);
      }
      const refused: unknown[] = [
        {},
        [rawEmail],
        "hello",
        { ...rawEmail, template: "welcome" },
        { to: "ann@example.test", subject: "x" },
        { ...rawEmail, html: "" },
        { ...rawEmail, subject: undefined },
        { ...rawEmail, bogus: "x@example.test" },
        { ...rawEmail, settings: { trackClicks: "yes" } },
        { ...rawEmail, settings: { trackReplies: true } },
        { ...rawEmail, to: 42 },
        { ...templatedEmail, from: "hello@acme.test" },
        { ...templatedEmail, variables: ["a"] },
        { template: "welcome", variables: {} },
      ];
      for (const body of refused) {
        expect(requestIsValid("POST /v1/emails", body).valid, `document accepts ${JSON.stringify(body)}`).toBe(false);
        const res = await call("POST /v1/emails", { body });
        expect(res.statusCode).toBe(400);
        expect(res.json(), JSON.stringify(body)).toEqual({ statusCode: 400, error: "Bad Request", code: "invalid_payload", message: expect.any(String), docsUrl: expect.any(String) });
      }
    });

    it("documents the error bodies of a single send", async () => {
      const from = await call("POST /v1/emails", { body: { ...rawEmail, from: "someone@elsewhere.test" } });
      expect(from.statusCode).toBe(400);
      expect(componentValidator("InvalidFromError")(from.json()), from.body).toBe(true);

      for (const [body, code] of [
        [{ ...rawEmail, sendAt: inDays(120) }, "send_at_out_of_range"],
        [{ ...rawEmail, sendAt: "next tuesday" }, "invalid_send_at"],
        [{ ...templatedEmail, template: "missing" }, "template_not_found"],
        [{ ...rawEmail, subject: "Hi\r\nBcc: victim@example.test" }, "header_injection"],
      ] as const) {
        const res = await call("POST /v1/emails", { body });
        expect(res.json(), JSON.stringify(body)).toMatchObject({ statusCode: 400, code });
      }
      const badJson = await call("POST /v1/emails", { payload: "{not json" });
      expect(badJson.json()).toMatchObject({ statusCode: 400, code: "invalid_json" });

      await call("POST /v1/emails", { body: { ...rawEmail, idempotencyKey: "order-1" } });
      const replay = await call("POST /v1/emails", { body: { ...rawEmail, idempotencyKey: "order-1" } });
      expect(replay.statusCode).toBe(200);
      const reused = await call("POST /v1/emails", { body: { ...rawEmail, subject: "Other", idempotencyKey: "order-1" } });
      expect(reused.json()).toMatchObject({ statusCode: 409, code: "idempotency_key_reused" });

      const { limit } = world.directory;
      world.directory.limit = world.directory.used;
      try {
        const full = await call("POST /v1/emails", { body: rawEmail });
        expect(full.json()).toEqual({
          statusCode: 403, error: "Forbidden", code: "monthly_limit_reached", message: expect.stringContaining("npx mailroom workspace update ws_oa --limit"),
          docsUrl: expect.stringMatching(/\/docs\/errors\/monthly_limit_reached$/),
        });
        const fullBatch = await call("POST /v1/emails/batch", { body: { emails: [rawEmail, templatedEmail] } });
        expect(fullBatch.statusCode).toBe(403);
      } finally {
        world.directory.limit = limit;
      }

      const text = await call("POST /v1/emails", { payload: "hello", contentType: "text/plain" });
      expect(text.statusCode).toBe(415);
      // 5 MB of HTML (UTF-8 bytes) is the most an email may carry.
      const atLimit = await call("POST /v1/emails", { body: { ...rawEmail, html: "é".repeat(2.5 * 1024 * 1024) } });
      expect(atLimit.statusCode, atLimit.body.slice(0, 200)).toBe(200);
      const big = await call("POST /v1/emails", { body: { ...rawEmail, html: "x".repeat(5 * 1024 * 1024 + 1) } });
      expect(big.statusCode).toBe(413);
      expect(big.json()).toMatchObject({ code: "payload_too_large" });
    });

    it("answers keys it does not know with the spec's 401 body", async () => {
      for (const headers of [{ authorization: "" }, { authorization: "Bearer mr_test_unknown_key" }]) {
        const res = await call("POST /v1/emails", { body: rawEmail, headers });
        expect(res.json()).toEqual({ statusCode: 401, error: "Unauthorized", code: "unauthorized", message: expect.any(String), docsUrl: expect.stringMatching(/\/docs\/errors\/unauthorized$/) });
      }
    });

    it("sends a mixed batch: successful items and indexed failures", async () => {
      const body = {
        emails: [
          rawEmail,
          { ...templatedEmail, sendAt: inDays(1) },
          { ...rawEmail, from: "someone@elsewhere.test" },
          { to: "no-form@example.test" },
          { ...templatedEmail, template: "missing" },
        ],
      };
      expect(requestIsValid("POST /v1/emails/batch", { emails: [rawEmail, templatedEmail] }).valid).toBe(true);
      const res = await call("POST /v1/emails/batch", { body });
      expect(res.statusCode).toBe(200);
      const { successful, failed } = res.json().emails;
      expect(successful.map((s: { type: string }) => s.type)).toEqual(["raw", "templated"]);
      expect(failed.map((f: { index: number }) => f.index)).toEqual([2, 3, 4]);
      expect(failed[0]).toMatchObject({ to: "ann@example.test", statusCode: 400, allowedDomains: ["acme.test"] });
      expect(failed[1]).toMatchObject({ to: "no-form@example.test", statusCode: 400, docsUrl: expect.any(String) });
      expect(failed[2]).toMatchObject({ to: "bob@example.test", code: "template_not_found" });

      for (const envelope of [{ emails: [] }, { emails: Array(51).fill(rawEmail) }, { email: rawEmail }, { emails: [rawEmail], dryRun: true }, [rawEmail]]) {
        expect(requestIsValid("POST /v1/emails/batch", envelope).valid, JSON.stringify(envelope).slice(0, 80)).toBe(false);
        const refused = await call("POST /v1/emails/batch", { body: envelope });
        expect(refused.json()).toMatchObject({ statusCode: 400, code: "batch_invalid" });
      }
    });

    it("reads and cancels emails", async () => {
      const scheduled = (await call("POST /v1/emails", { body: { ...templatedEmail, sendAt: inDays(3) } })).json().email;
      const sent = (await call("POST /v1/emails", { body: rawEmail })).json().email;

      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${scheduled.id}` });
      expect(got.json().email).toMatchObject({ id: scheduled.id, status: "SCHEDULED", sendAt: expect.any(String), createdAt: expect.any(String) });
      const cancelled = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${scheduled.id}/cancel` });
      expect(cancelled.json().email.status).toBe("CANCELLED");
      const again = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${scheduled.id}/cancel` });
      expect(again.json()).toMatchObject({ statusCode: 409, code: "email_not_cancellable" });
      const notScheduled = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, body: {} });
      expect(notScheduled.statusCode).toBe(409);

      const otherWorkspace = await call("GET /v1/emails/{id}", { url: `/v1/emails/${sent.id}`, headers: KEY_B });
      expect(otherWorkspace.json()).toMatchObject({ statusCode: 404, code: "email_not_found" });
      await call("GET /v1/emails/{id}", { url: "/v1/emails/not-an-id" });
      const missing = await call("POST /v1/emails/{id}/cancel", { url: "/v1/emails/trs_00000000000000000000000000/cancel" });
      expect(missing.statusCode).toBe(404);
      // A bodiless POST that still says application/json is treated as having no body.
      const emptyJson = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "" });
      expect(emptyJson.json()).toMatchObject({ statusCode: 409, code: "email_not_cancellable" });
      const badJson = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "{" });
      expect(badJson.json()).toMatchObject({ statusCode: 400, code: "invalid_json" });
      const text = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, payload: "x", contentType: "text/plain" });
      expect(text.statusCode).toBe(415);
      const big = await call("POST /v1/emails/{id}/cancel", { url: `/v1/emails/${sent.id}/cancel`, body: { pad: "x".repeat(2 * 1024 * 1024) } });
      expect(big.statusCode).toBe(413);
      const bigItem = await call("POST /v1/emails/batch", { body: { emails: [{ ...rawEmail, html: "x".repeat(5 * 1024 * 1024 + 1) }, rawEmail] } });
      expect(bigItem.json().emails.failed).toEqual([expect.objectContaining({ index: 0, statusCode: 413, code: "payload_too_large" })]);
      const bigBatch = await call("POST /v1/emails/batch", { body: { emails: Array.from({ length: 6 }, () => ({ ...rawEmail, html: "x".repeat(4.5 * 1024 * 1024) })) } });
      expect(bigBatch.statusCode).toBe(413);
      expect((await call("POST /v1/emails/batch", { payload: "a", contentType: "text/plain" })).statusCode).toBe(415);
    });

    it("lists and exports the email log", async () => {
      const sent: string[] = [];
      for (let i = 0; i < 3; i++) sent.push((await call("POST /v1/emails", { body: { ...rawEmail, to: `log-${i}@example.test`, groupBy: "log" } })).json().email.id);
      const first = await call("GET /v1/emails", { url: "/v1/emails?limit=2&groupBy=log" });
      expect(first.json().emails).toMatchObject({ hasMore: true, cursor: expect.any(String) });
      const second = await call("GET /v1/emails", { url: `/v1/emails?limit=2&groupBy=log&cursor=${first.json().emails.cursor}` });
      expect(second.json().emails).toMatchObject({ hasMore: false, cursor: null });
      const listed = [...first.json().emails.items, ...second.json().emails.items];
      expect(listed.map((e: { id: string }) => e.id).sort()).toEqual([...sent].sort());
      // Each item is what GET /v1/emails/{id} answers.
      expect(listed[0]).toEqual((await call("GET /v1/emails/{id}", { url: `/v1/emails/${listed[0].id}` })).json().email);
      expect((await call("GET /v1/emails", { url: "/v1/emails?recipient=LOG-1@example.test&status=sent,failed" })).json().emails.items.map((e: { id: string }) => e.id)).toEqual([sent[1]]);
      expect((await call("GET /v1/emails", { url: "/v1/emails?tag=campaign:spring" })).json().emails).toEqual({ items: [], cursor: null, hasMore: false });
      expect((await call("GET /v1/emails", { headers: KEY_B })).json().emails.items).toEqual([]);
      for (const [query, code] of [
        ["limit=0", "invalid_request"], ["limit=abc", "invalid_request"], ["status=SENT,NOPE", "invalid_request"], ["cursor=forged", "invalid_cursor"],
        ["since=yesterday", "invalid_request"], ["since=2030-01-02&until=2030-01-01", "invalid_request"], ["tag=campaign", "invalid_request"], ["nope=1", "invalid_request"],
      ]) {
        expect((await call("GET /v1/emails", { url: `/v1/emails?${query}` })).json(), query).toMatchObject({ statusCode: 400, code });
      }

      const csv = await call("GET /v1/emails/export", { url: "/v1/emails/export?groupBy=log&since=2000-01-01" });
      expect(csv.headers["content-disposition"]).toMatch(/^attachment; filename="emails-/);
      const rows = parseCsv(csv.body, { columns: true }) as Array<Record<string, string>>;
      expect(rows.map((r) => r.id).sort()).toEqual([...sent].sort());
      expect(rows[0]).toMatchObject({ from: rawEmail.from, subject: rawEmail.subject, status: "SENT", groupBy: "log", type: "raw" });
      expect((await call("GET /v1/emails/export", { url: "/v1/emails/export?until=31-01-2030" })).json()).toMatchObject({ statusCode: 400, code: "invalid_request" });
    });

    it("compares idempotent requests by their parsed form: nulls, key order and spacing do not matter", async () => {
      const body = { ...rawEmail, groupBy: "g1", idempotencyKey: "parsed-1", settings: { trackClicks: true } };
      const first = (await call("POST /v1/emails", { body })).json().email;
      const variants = [
        `{"idempotencyKey":"parsed-1","settings":{"trackClicks":true},"html":"<p>Hi</p>","subject":"Welcome","to":"ann@example.test","from":"Acme <hello@acme.test>","groupBy":"g1"}`,
        JSON.stringify({ ...body, replyTo: null, text: null, sendAt: null, contactProperties: null }, null, 2),
        JSON.stringify({ ...body, settings: { trackClicks: null, trackOpens: false }, replyTo: [] }),
        JSON.stringify({ ...body, settings: undefined }),
      ];
      for (const payload of variants) {
        const again = await call("POST /v1/emails", { payload });
        expect(again.statusCode, payload).toBe(200);
        expect(again.json().email.id).toBe(first.id);
      }
      const absentGroupBy = { ...rawEmail, idempotencyKey: "parsed-2" };
      const second = (await call("POST /v1/emails", { body: absentGroupBy })).json().email;
      expect((await call("POST /v1/emails", { body: { ...absentGroupBy, groupBy: null } })).json().email.id).toBe(second.id);
      for (const changed of [{ ...body, groupBy: "g2" }, { ...body, replyTo: "help@acme.test" }, { ...body, settings: { trackOpens: true } }]) {
        const reused = await call("POST /v1/emails", { body: changed });
        expect(reused.json(), JSON.stringify(changed)).toMatchObject({ statusCode: 409, code: "idempotency_key_reused" });
      }
    });

    it("serves the error documentation docsUrl points at", async () => {
      const index = await call("GET /docs/errors");
      expect(index.headers["content-type"]).toMatch(/^text\/html/);
      expect(index.body).toContain('href="errors/campaigns.invalid_from_email"');
      const refused = await call("POST /v1/emails", { body: { to: "ann@example.test" } });
      const docsUrl = new URL(refused.json().docsUrl);
      expect(docsUrl.pathname).toBe("/docs/errors/invalid_payload");
      const page = await call("GET /docs/errors/{code}", { url: docsUrl.pathname });
      expect(page.body).toContain("HTTP status:</strong> 400 Bad Request");
      const slashed = await call("GET /docs/errors/{code}", { url: "/docs/errors/campaigns.invalid_from_email" });
      expect(slashed.body).toContain("<code>campaigns/invalid_from_email</code>");
      const unknown = await call("GET /docs/errors/{code}", { url: "/docs/errors/no_such_code" });
      expect(unknown.statusCode).toBe(404);
      expect((await call("GET /docs/errors/{code}", { url: "/docs/errors/toString" })).statusCode).toBe(404);
    });

    it("serves the docs pages the error pages link to", async () => {
      const index = await call("GET /docs");
      expect(index.headers["content-type"]).toMatch(/^text\/html/);
      expect(index.body).toContain('href="docs/broadcasts"');
      const code = await call("GET /docs/errors/{code}", { url: "/docs/errors/ab_test_not_waiting" });
      const link = /Read more:<\/strong> <a href="\.\.\/([^"#]+)#([^"]+)"/.exec(code.body)!;
      const page = await call("GET /docs/{page}", { url: `/docs/${link[1]}` });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(`id="${link[2]}"`);
      // Links between pages name the served page; HTML written in a page is escaped.
      expect(page.body).not.toMatch(/href="[^"]*\.md(#|")/);
      for (const name of ["no_such_page", "toString", "README"]) {
        expect((await call("GET /docs/{page}", { url: `/docs/${name}` })).statusCode, name).toBe(404);
      }
    });

    it("documents the 503 of a service that is down and the 429 of the rate limit", async () => {
      const first = await call("POST /v1/emails", { body: rawEmail }, degraded);
      expect(first.json()).toMatchObject({ statusCode: 503, code: "service_unavailable" });
      await call("POST /v1/emails", { body: rawEmail }, degraded);
      const limited = await call("POST /v1/emails", { body: rawEmail }, degraded);
      expect(limited.statusCode).toBe(429);
      for (const header of ["retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"]) expect(limited.headers[header]).toBeDefined();
    });
  });

  describe("outcomes, stats and webhooks", () => {
    it("shows an email's outcomes and the stats of transactional emails", async () => {
      const sent = (await call("POST /v1/emails", { body: { ...rawEmail, groupBy: "receipts" } })).json().email;
      const now = world.clock.now();
      const { recordEvent } = await import("../../services/email/src/domain/outcomes.js");
      await recordEvent(world.outcomeDeps, { eventId: "oa_1", emailId: sent.id, kind: "sent", at: now });
      await recordEvent(world.outcomeDeps, { eventId: "oa_2", emailId: sent.id, kind: "opened", at: now });
      await recordEvent(world.outcomeDeps, { eventId: "oa_3", emailId: sent.id, kind: "clicked", at: now, url: "https://acme.test/x" });
      const got = await call("GET /v1/emails/{id}", { url: `/v1/emails/${sent.id}` });
      expect(got.json().email).toMatchObject({ status: "DELIVERED", opens: 1, clicks: 1, links: [{ url: "https://acme.test/x", clicks: 1 }], lastEvent: { type: "CLICKED" } });

      const stats = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?groupBy=receipts" });
      expect(stats.statusCode).toBe(200);
      expect(stats.json().stats.totals).toMatchObject({ sent: 1, delivered: 1, opened: 1, clicked: 1, rates: { opened: 1, clicked: 1 } });
      expect(stats.json().stats.groups).toEqual([expect.objectContaining({ groupBy: "receipts", sent: 1 })]);
      const backwards = await call("GET /v1/stats/emails", { url: "/v1/stats/emails?from=2030-02-01&to=2030-01-01" });
      expect(backwards.statusCode).toBe(400);
    });

    it("shows a broadcast's counters and rates, 404 for another workspace's", async () => {
      const stats = await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_known/stats" });
      expect(stats.json().stats).toMatchObject({ broadcastId: "cmp_known", status: "IN_PROGRESS", sent: 8, opened: 4, rates: { opened: 0.5, clicked: 0.25 } });
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_known/stats", headers: KEY_B })).statusCode).toBe(404);
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_addon/stats" })).statusCode).toBe(402);
      expect((await call("GET /v1/broadcasts/{id}/stats", { url: "/v1/broadcasts/cmp_not_enabled/stats" })).statusCode).toBe(403);
    });

    it("manages webhooks as the official client does, with Mailroom's delivery routes", async () => {
      const created = await call("POST /v1/webhooks", { body: { url: "https://hooks.acme.test/in", events: ["EMAIL_SENT", "EMAIL_OPENED"], token: "s3cret" } });
      expect(created.statusCode).toBe(200);
      const webhook = created.json().webhook;
      expect(webhook).toMatchObject({ url: "https://hooks.acme.test/in", events: ["EMAIL_SENT", "EMAIL_OPENED"], status: "ACTIVE", token: "s3cret", workspaceId: "ws_oa" });
      const bad = await call("POST /v1/webhooks", { body: { url: "https://hooks.acme.test/in", events: ["NOPE"] } });
      expect(bad.json()).toMatchObject({ statusCode: 400, code: "invalid_payload" });
      const item = `/v1/webhooks/${webhook.id}`;

      expect((await call("GET /v1/webhooks")).json().webhooks).toEqual([
        { id: webhook.id, url: webhook.url, events: webhook.events, status: "ACTIVE", description: "hooks.acme.test", createdAt: webhook.createdAt },
      ]);
      expect((await call("GET /v1/webhooks/{id}", { url: item })).json().webhook).toEqual(webhook);
      expect((await call("GET /v1/webhooks/{id}", { url: item, headers: KEY_B })).statusCode).toBe(404);

      const test = await call("POST /v1/webhooks/{id}/test", { url: `${item}/test` });
      expect(test.json().delivery).toMatchObject({ webhookId: webhook.id, eventType: "TESTING_CONNECTION", state: "PENDING" });
      expect((await call("POST /v1/webhooks/{id}/test", { url: `${item}/test`, headers: KEY_B })).statusCode).toBe(404);
      const deliveries = await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries` });
      expect(deliveries.json().deliveries.map((d: { id: string }) => d.id)).toEqual([test.json().delivery.id]);
      expect((await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries?limit=0` })).statusCode).toBe(400);
      expect((await call("GET /v1/webhooks/{id}/deliveries", { url: `${item}/deliveries`, headers: KEY_B })).statusCode).toBe(404);
      const redeliverUrl = `${item}/deliveries/${test.json().delivery.id}/redeliver`;
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: redeliverUrl })).json().delivery.id).toBe(test.json().delivery.id);
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: `${item}/deliveries/whd_none/redeliver` })).json().code).toBe("delivery_not_found");

      const paused = await call("POST /v1/webhooks/{id}", { url: item, body: { status: "PAUSED", events: ["EMAIL_CLICKED"] } });
      expect(paused.json().webhook).toMatchObject({ status: "PAUSED", events: ["EMAIL_CLICKED"] });
      expect((await call("POST /v1/webhooks/{id}/test", { url: `${item}/test` })).json().code).toBe("webhook_not_active");
      expect((await call("POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver", { url: redeliverUrl })).json().code).toBe("webhook_not_active");
      expect((await call("POST /v1/webhooks/{id}", { url: item, body: { status: "BANNED" } })).statusCode).toBe(400);
      expect((await call("POST /v1/webhooks/{id}", { url: item, body: { status: "ACTIVE" }, headers: KEY_B })).statusCode).toBe(404);

      const deleted = await call("DELETE /v1/webhooks/{id}", { url: item });
      expect(deleted.json()).toMatchObject({ isDeleted: true, webhook: { id: webhook.id } });
      expect((await call("DELETE /v1/webhooks/{id}", { url: item })).statusCode).toBe(404);
    });
  });

  it("drove every documented response of its concern through the gateway", () => expectDriven("emails"));
});
