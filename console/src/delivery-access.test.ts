import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { EmailService, type SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { DeliveryService } from "@mailroom/proto/delivery/v1/delivery_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory, storeTeam } from "../../services/audience/src/testing.js";
import { teamService } from "../../services/accounts/src/team-routes.js";
import { consoleGateway, csrfOf, Jar, signInByLink, type ConsoleBrowser } from "./sign-in-testing.js";
import { HINT_WORKSPACE, hintedCommands, runHint, workspaceOfCall } from "../../cli/testing.js";

/** The page's text as read: numeric references (escapeHtml) and named ones (hono/html, the error page's view). */
const ENTITIES: Record<string, string> = { lt: "<", gt: ">", quot: '"', amp: "&" };
const unescapeHtml = (html: string) =>
  html.replace(/&(?:#(\d+)|(lt|gt|quot|amp));/g, (_, code: string | undefined, name: string | undefined) => (code ? String.fromCharCode(Number(code)) : ENTITIES[name!]!));

/**
 * Who sees the Delivery page (/console/delivery). It shows the delivery process's relays,
 * routes, health and counters across every workspace: the operator's, not a tenant's. Against
 * the accounts unit's own TeamService and keys (in memory), with members of each role signed in by
 * magic link and key sessions of each role: OWNER and ADMIN (members, and an ADMIN key owned by
 * an owner) see it and its link; EDITOR and VIEWER (members, the unowned bootstrap key, a
 * read-only key) get the console's 403 "Not allowed" page, with no Delivery link in the nav.
 * The delivery process is a stub answering GetStatus: what is under test is the gateway's door.
 */
const WS = "ws_dl";
const ROUTE_TARGET = "smtp://relay.operator.test:587";
const sent: SendEmailRequest[] = [];
const KEYS = { admin: "mr_test_delivery_admin_key", editor: "mr_test_delivery_editor_key", viewer: "mr_test_delivery_viewer_key" };

describe("the console's Delivery page is for owners and admins", () => {
  let browser: ConsoleBrowser;
  const jars: Record<string, Jar> = {};

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({
      workspaces: [{
        id: WS, name: "Delivery Co",
        members: ["OWNER", "ADMIN", "EDITOR", "VIEWER"].map((role) => ({ email: `${role.toLowerCase()}@dl.test`, role })),
        // The operator's bootstrap key: no owner, so EDITOR at most.
        apiKeys: [{ key: KEYS.editor, scopes: ["api_user"] }, { key: KEYS.viewer, scopes: ["api_read"] }],
      }],
    }));
    // An ADMIN key needs an owner who is OWNER or ADMIN (the operator CLI's `key create --role ADMIN --owner`).
    await dir.keys.create(WS, { name: "operator", role: "ADMIN", ownerMemberId: "owner@dl.test", fixedKey: KEYS.admin });
    const wired = await storeTeam(dir);
    const transport = memoryTransport((router) => {
      directoryRoutes(dir, undefined, wired.team)(router);
      router.service(TeamService, teamService(wired.team, wired.auditLog));
      router.service(EmailService, {
        sendEmail(req) {
          sent.push(req);
          return {};
        },
      });
      router.service(DeliveryService, {
        getStatus() {
          return {
            mode: "relay", processId: "delivery-1", inFlight: 2n, sentTotal: 7n,
            routes: [{ name: "primary", kind: "relay", target: ROUTE_TARGET, weight: 1, workspaces: ["ws_someone_else"], sentTotal: 7n }],
          };
        },
      });
    });
    browser = await consoleGateway(transport, { secret: "console-delivery-access-secret-0123456789", name: "console-delivery-access", authCacheMs: 0 });

    for (const role of ["OWNER", "ADMIN", "EDITOR", "VIEWER"]) jars[`member ${role}`] = await signInByLink(browser, sent, `${role.toLowerCase()}@dl.test`);
    for (const [role, key] of [["ADMIN", KEYS.admin], ["EDITOR", KEYS.editor], ["VIEWER", KEYS.viewer]]) {
      const jar = new Jar();
      const page = await browser.get("/console/sign-in", jar);
      expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey: key })).statusCode).toBe(303);
      jars[`key ${role}`] = jar;
    }
  }, 60_000);
  afterAll(async () => browser?.app.close());

  const deliveryLink = /<a href="\/console\/delivery"/;
  /** The role table: each session, and whether it may see the page. */
  const WHO_SEES: Record<string, boolean> = {
    "member OWNER": true, "member ADMIN": true, "key ADMIN": true,
    "member EDITOR": false, "member VIEWER": false, "key EDITOR": false, "key VIEWER": false,
  };
  const allowed = Object.keys(WHO_SEES).filter((who) => WHO_SEES[who]);
  const refused = Object.keys(WHO_SEES).filter((who) => !WHO_SEES[who]);

  it.each(allowed)("%s sees the page, its nav link and counters labelled as the whole process's", async (who) => {
    const res = await browser.get("/console/delivery", jars[who]);
    expect(res.statusCode).toBe(200);
    // The session is the one the row names (a capped key would show a lower role here).
    expect(res.body).toContain(`(${who.split(" ")[1]})`);
    expect(res.body).toContain("<h1>Delivery</h1>");
    expect(res.body).toMatch(/<a href="\/console\/delivery" aria-current="page">Delivery<\/a>/);
    expect(res.body).toContain(ROUTE_TARGET);
    expect(res.body).toContain("In flight (this delivery process, all workspaces)");
    expect(res.body).toContain("Sent / deferred / bounced / failed (this delivery process, all workspaces)");
    expect(res.body).toContain("every workspace's mail together, not this workspace's alone");
    // Even for them another workspace's reservation is a count, never its id.
    expect(res.body).toContain("1 other workspace only");
    expect(res.body).not.toContain("ws_someone_else");
  });

  it.each(refused)("%s is refused with the console's 403 page and sees no Delivery link", async (who) => {
    const res = await browser.get("/console/delivery", jars[who]);
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("<h1>Not allowed</h1>");
    expect(res.body).toContain("This needs the ADMIN role or higher");
    // Its hint names the workspace and a command the CLI runs as written.
    const hinted = hintedCommands(unescapeHtml(res.body));
    expect(hinted).toEqual([`member role ${WS} <email> <ROLE>`]);
    const { calls, err } = await runHint(hinted[0]!.replace(WS, "<workspace-id>"));
    expect(calls.map((c) => [c.method, workspaceOfCall(c)]), err.join("\n")).toEqual([["updateMemberRole", HINT_WORKSPACE]]);
    expect(res.body).not.toContain(ROUTE_TARGET);
    expect(res.body).not.toMatch(deliveryLink);
    // The audit log answers the same way, so both refusals are the console's one answer.
    const audit = await browser.get("/console/audit", jars[who]);
    expect(audit.statusCode).toBe(403);
    expect(audit.body).toContain("<h1>Not allowed</h1>");

    // Pages they may open carry no link to it either (nothing shown leads to a 403).
    const team = await browser.get("/console/team", jars[who]);
    expect(team.statusCode).toBe(200);
    expect(team.body).toContain(`(${who.split(" ")[1]})`);
    expect(team.body).toMatch(/<a href="\/console\/team" aria-current="page">Team<\/a>/);
    expect(team.body).not.toMatch(deliveryLink);
  });

  it("shows owners and admins the link on every page, not only on Delivery", async () => {
    for (const who of allowed) {
      const team = await browser.get("/console/team", jars[who]);
      expect(team.statusCode).toBe(200);
      expect(team.body, who).toMatch(deliveryLink);
    }
  });
});
