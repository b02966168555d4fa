import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { parse as parser } from "csv-parse";
import { parse } from "csv-parse/sync";
import type { FastifyInstance } from "fastify";
import { EmailRecordSchema, EmailService, EmailStatus, type ListEmailsRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { memoryDirectory } from "../../../services/audience/src/testing.js";
import { directoryClients } from "./directory-clients.testing.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { EMAIL_EXPORT_COLUMNS, EXPORT_PAGE_SIZE, registerListEmails } from "./emails-list.js";

/**
 * GET /v1/emails/export over a stand-in email service that holds any number of pages: values
 * that need quoting or formula escaping come back intact through a CSV parser, and the export
 * pages only as fast as the client reads (a paused client stops the paging).
 */

const KEY = { authorization: "Bearer mr_test_export_unit_1" };
/** Subjects no form of the API accepts (line breaks) still come out as one cell. */
const TRICKY = ["line one\nline two", "a\r\nb", 'quote " and, comma', "=SUM(A1:A9)", "@cmd", "+1", "-1", "\tTab", "plain"];

describe("the email export", () => {
  let app: FastifyInstance;
  let pages = 300;
  const calls: ListEmailsRequest[] = [];
  const subjectPad = "x".repeat(1000);

  function record(page: number, i: number) {
    const n = page * EXPORT_PAGE_SIZE + i;
    return create(EmailRecordSchema, {
      id: `trs_${String(n).padStart(26, "0")}`,
      messageId: `<${n}@acme.test>`,
      status: EmailStatus.DELIVERED,
      to: n % 2 ? `"Lee, Ann" <ann${n}@example.test>` : `bob${n}@example.test`,
      type: "raw",
      from: "Acme <team@acme.test>",
      subject: page === 0 ? TRICKY[i % TRICKY.length] : `${n} ${subjectPad}`,
      groupBy: i % 3 ? "" : "receipts",
      createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1) - n * 1000)),
      outcomes: { deliveredAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1, 1) - n * 1000)), opens: 2 },
    });
  }

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.load({ workspaces: [{ id: "ws_exp", name: "Export", apiKeys: [{ key: "mr_test_export_unit_1" }] }] });
    const email = createClient(EmailService, memoryTransport(({ service }) => {
      service(EmailService, {
        listEmails(req) {
          calls.push(req);
          const page = req.cursor ? Number(req.cursor) : 0;
          const last = page + 1 >= pages;
          return { emails: Array.from({ length: req.limit }, (_, i) => record(page, i)), nextCursor: last ? "" : String(page + 1) };
        },
      });
    }));
    app = await buildGateway(
      {
        config: loadConfig({}),
        logger: createLogger("gateway-export-test", "silent"),
        clients: { ...directoryClients(dir), email } as unknown as ServiceClients,
        rateLimitPerMinute: 0,
        authCacheMs: 60_000,
      },
      { api: [registerListEmails], public: [] },
    );
    await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => app?.close());

  it("writes a header and one row per email; commas, quotes, line breaks and formulas survive a CSV parser", async () => {
    pages = 2;
    calls.length = 0;
    const res = await app.inject({ method: "GET", url: "/v1/emails/export?status=delivered&groupBy=receipts", headers: KEY });
    expect(res.statusCode).toBe(200);
    expect(calls[0]).toMatchObject({ workspaceId: "ws_exp", statuses: [EmailStatus.DELIVERED], groupBy: "receipts", limit: EXPORT_PAGE_SIZE });
    const table = parse(res.body) as string[][];
    expect(table[0]).toEqual([...EMAIL_EXPORT_COLUMNS]);
    expect(table).toHaveLength(1 + 2 * EXPORT_PAGE_SIZE);
    const rows = parse(res.body, { columns: true }) as Array<Record<string, string>>;
    const escaped = (s: string) => (/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);
    for (const [i, r] of rows.slice(0, EXPORT_PAGE_SIZE).entries()) {
      expect(r.subject).toBe(escaped(TRICKY[i % TRICKY.length]));
      expect(r.to).toBe(i % 2 ? `"Lee, Ann" <ann${i}@example.test>` : `bob${i}@example.test`);
    }
    expect(rows[0]).toMatchObject({
      id: "trs_00000000000000000000000000", status: "DELIVERED", from: "Acme <team@acme.test>", groupBy: "receipts", type: "raw",
      createdAt: "2030-01-01T00:00:00.000Z", deliveredAt: "2030-01-01T01:00:00.000Z", opens: "2", clicks: "0", bouncedAt: "",
    });
  });

  it("pages only as fast as the client reads, and streams any size", async () => {
    pages = 300;
    calls.length = 0;
    const { port } = app.server.address() as AddressInfo;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get({ host: "127.0.0.1", port, path: "/v1/emails/export", headers: KEY }, resolve).on("error", reject));
    expect(res.statusCode).toBe(200);
    res.pause();
    await new Promise((r) => setTimeout(r, 500));
    // ~30 MB in all; a paused client holds the export to what the socket buffers take.
    const whilePaused = calls.length;
    expect(whilePaused).toBeLessThan(pages / 3);
    await new Promise((r) => setTimeout(r, 300));
    expect(calls.length).toBe(whilePaused);
    // Parsed as it arrives (csv-parse's stream), never held whole.
    let records = 0;
    for await (const _ of res.pipe(parser())) records++;
    expect(records).toBe(1 + pages * EXPORT_PAGE_SIZE);
    expect(calls).toHaveLength(pages);
  }, 90_000);

  it("stops paging when the client goes away", async () => {
    pages = 300;
    calls.length = 0;
    const { port } = app.server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const req = http.get({ host: "127.0.0.1", port, path: "/v1/emails/export", headers: KEY }, (res) => {
        res.once("data", () => {
          req.destroy();
          resolve();
        });
      });
      req.on("error", () => undefined);
      setTimeout(() => reject(new Error("no data")), 5000);
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(calls.length).toBeLessThan(pages / 3);
  });
});
