import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { appError } from "@mailroom/kit/errors.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import type { ListAuditLogRequest } from "@mailroom/proto/accounts/v1/team_pb.js";
import { buildGateway } from "../app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";
import { HINT_WORKSPACE, hintedCommands, runHint, workspaceOfCall } from "../../../cli/testing.js";

/**
 * GET /v1/audit-log over an accounts unit answering in memory: the query becomes ListAuditLog's
 * filters, the answer the documented page; a key below ADMIN is refused; every documented
 * response is driven and checked against the OpenAPI document.
 */
const KEYS = { OWNER: "mr_test_audit_owner", ADMIN: "mr_test_audit_admin", EDITOR: "mr_test_audit_editor", VIEWER: "mr_test_audit_viewer" } as const;
type Role = keyof typeof KEYS;

const asked: ListAuditLogRequest[] = [];
const clients = {
  accounts: {
    async authenticate({ apiKey }: { apiKey: string }) {
      const role = (Object.keys(KEYS) as Role[]).find((r) => KEYS[r] === apiKey);
      if (!role) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: "ws_audit", keyId: `key_${role.toLowerCase()}`, scopes: role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"], role, memberId: "" };
    },
  },
  team: {
    async listAuditLog(req: ListAuditLogRequest, options: { headers: Record<string, string> }) {
      asked.push(req);
      expect(options.headers["x-mailroom-actor"]).toMatch(/^key:key_/);
      if (req.pageToken === "bogus") throw appError({ code: "invalid_page_token", httpStatus: 400, message: "page_token is not one this list returned" });
      if (req.actor === "robot:1") throw appError({ code: "invalid_actor", httpStatus: 400, message: 'actor "robot:1": kind must be key, member, cli or system' });
      return {
        entries: [
          {
            id: "aud_2", workspaceId: "ws_audit", at: timestampFromDate(new Date("2026-11-27T04:00:00Z")),
            actor: { kind: "key", id: "key_owner", label: "" }, action: "contact.update", resource: { type: "contact", id: "ct_1" },
            requestId: "req-1", summary: { "contact.firstName": "Ada", contactId: "ct_1" },
          },
          {
            id: "aud_1", workspaceId: "ws_audit", at: timestampFromDate(new Date("2026-11-27T03:00:00Z")),
            actor: { kind: "cli", id: "root", label: "root" }, action: "api_key.create", resource: { type: "api_key", id: "key_2" },
            requestId: "req-0", summary: { name: "ci", key: "" },
          },
        ],
        nextPageToken: req.pageToken ? "" : "next-page",
      };
    },
  },
};

describe("GET /v1/audit-log", () => {
  let app: FastifyInstance;
  let api: DocumentedCalls;
  beforeAll(async () => {
    app = await buildGateway({
      config: { ...loadConfig({}), secret: "audit-log-gateway-secret-0123456789" },
      logger: createLogger("gateway-audit-log-test", "silent"),
      clients: clients as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 60_000,
    });
    api = await documentedCalls(app, {});
  });
  afterAll(async () => app?.close());
  const as = (role: Role) => ({ authorization: `Bearer ${KEYS[role]}` });

  it("passes the filters to the accounts unit and answers one page, newest first, with the next cursor", async () => {
    asked.length = 0;
    const url = "/v1/audit-log?since=2026-11-01T00:00:00Z&until=2026-12-01T00:00:00.000Z&actor=key:key_owner&resource=contact:ct_1&limit=2";
    const first = await api.call("GET /v1/audit-log", url, undefined, as("OWNER"));
    expect(first.statusCode).toBe(200);
    expect(first.data.auditLog).toMatchObject({ cursor: "next-page", hasMore: true });
    expect(first.data.auditLog.items[0]).toEqual({
      id: "aud_2", workspaceId: "ws_audit", at: "2026-11-27T04:00:00.000Z", actor: { kind: "key", id: "key_owner", label: "" },
      action: "contact.update", resource: { type: "contact", id: "ct_1" }, requestId: "req-1", summary: { "contact.firstName": "Ada", contactId: "ct_1" },
    });
    expect(asked[0]).toMatchObject({ workspaceId: "ws_audit", actor: "key:key_owner", resource: "contact:ct_1", limit: 2, pageToken: "" });
    expect(timestampDate(asked[0]!.since!).toISOString()).toBe("2026-11-01T00:00:00.000Z");
    expect(timestampDate(asked[0]!.until!).toISOString()).toBe("2026-12-01T00:00:00.000Z");

    const last = await api.call("GET /v1/audit-log", "/v1/audit-log?cursor=next-page", undefined, as("ADMIN"));
    expect(last.data.auditLog).toMatchObject({ cursor: null, hasMore: false });
    expect(asked[1]).toMatchObject({ pageToken: "next-page", limit: 50, actor: "", resource: "" });
  });

  it("refuses a bad query: 400 invalid_request (dates, filters, limit), invalid_cursor (a cursor it never gave)", async () => {
    for (const query of ["since=yesterday", "limit=0", "limit=501", "actor=a%20b", "resource=contact%3Bdrop", "other=1", "actor=robot:1"]) {
      const res = await api.call("GET /v1/audit-log", `/v1/audit-log?${query}`, undefined, as("OWNER"));
      expect(res.statusCode, query).toBe(400);
      expect(res.data.code, query).toBe("invalid_request");
    }
    const res = await api.call("GET /v1/audit-log", "/v1/audit-log?cursor=bogus", undefined, as("OWNER"));
    expect(res.data).toMatchObject({ statusCode: 400, code: "invalid_cursor" });
  });

  it("owners and admins only: an EDITOR or VIEWER key is refused", async () => {
    for (const role of ["EDITOR", "VIEWER"] as const) {
      const res = await api.call("GET /v1/audit-log", "/v1/audit-log", undefined, as(role));
      expect(res.statusCode, role).toBe(403);
      expect(res.data.code).toBe("insufficient_role");
      // The hint names the key's workspace and a command the CLI runs as written.
      const hinted = hintedCommands(res.data.message);
      expect(hinted, res.data.message).toEqual(["member role ws_audit <email> <ROLE>"]);
      const { calls, err } = await runHint(hinted[0]!.replace("ws_audit", "<workspace-id>"));
      expect(calls.map((c) => [c.method, workspaceOfCall(c)]), err.join("\n")).toEqual([["updateMemberRole", HINT_WORKSPACE]]);
    }
  });

  it("drove every response it documents", () => {
    expect(api.undriven((p) => p === "/v1/audit-log")).toEqual([]);
  });
});
