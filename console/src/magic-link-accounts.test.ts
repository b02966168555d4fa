import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { EmailService, type SendEmailRequest } from "@mailroom/proto/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory, storeTeam } from "../../services/audience/src/testing.js";
import { teamService } from "../../services/accounts/src/team-routes.js";
import type { Team } from "../../services/accounts/src/domain/team.js";
import { SESSION_COOKIE } from "./session.js";
import { askForLink, consoleGateway, Jar, redeem, type ConsoleBrowser } from "./sign-in-testing.js";

/**
 * Magic-link sign-in through the console against the accounts unit's own TeamService (its domain
 * and Connect mapping, in memory, on a clock the test moves): a link expires after 15 minutes,
 * works once, and an altered one is refused; the session token rotates after an hour and the
 * cookie follows; a removed member is signed out on the next request.
 */
const MINUTE = 60_000;
let now = new Date(Math.floor(Date.now() / 1000) * 1000);
const clock = () => new Date(now);
const sent: SendEmailRequest[] = [];

describe("console magic links against the accounts unit's TeamService", () => {
  let browser: ConsoleBrowser;
  let team: Team;

  beforeAll(async () => {
    const dir = await memoryDirectory({ now: clock });
    await dir.bootstrap.loadJson(JSON.stringify({
      workspaces: [{ id: "ws_ml", name: "Magic Co", members: [{ email: "owner@magic.test", role: "OWNER" }, { email: "ed@magic.test", role: "EDITOR" }] }],
    }));
    const wired = await storeTeam(dir, { now: clock });
    team = wired.team;
    const transport = memoryTransport((router) => {
      directoryRoutes(dir, undefined, team)(router);
      router.service(TeamService, teamService(team, wired.auditLog));
      router.service(EmailService, {
        sendEmail(req) {
          sent.push(req);
          return {};
        },
      });
    });
    // Every request asks the team: removal must show at once here.
    browser = await consoleGateway(transport, { secret: "console-magic-accounts-secret-0123456789", name: "console-magic-test", authCacheMs: 0 });
  });
  afterAll(async () => browser?.app.close());

  const get = (url: string, jar: Jar) => browser.get(url, jar);
  async function mailedLink(email: string): Promise<string> {
    const { res, mail, link } = await askForLink(browser, sent, email);
    expect(res.statusCode).toBe(200);
    expect(mail?.email?.to).toBe(email);
    return link!;
  }

  it("signs in once; the same link again, an altered one and an expired one are refused", async () => {
    const link = await mailedLink("owner@magic.test");
    const first = await redeem(browser, link);
    expect(first.res.statusCode).toBe(303);
    expect((await get("/console/sessions", first.jar)).body).toContain("owner@magic.test");

    const again = await redeem(browser, link);
    expect(again.res.statusCode).toBe(401);
    expect(again.res.body).toContain("already used");
    expect(again.jar.cookies.has(SESSION_COOKIE)).toBe(false);

    const fresh = await mailedLink("owner@magic.test");
    const i = fresh.length - 5;
    const altered = fresh.slice(0, i) + (fresh[i] === "A" ? "B" : "A") + fresh.slice(i + 1);
    const tampered = await redeem(browser, altered);
    expect(tampered.res.statusCode).toBe(401);
    expect(tampered.res.body).toContain("not valid");

    now = new Date(now.getTime() + 15 * MINUTE + 1000);
    const expired = await redeem(browser, fresh);
    expect(expired.res.statusCode).toBe(401);
    expect(expired.res.body).toContain("expired");
    expect(expired.jar.cookies.has(SESSION_COOKIE)).toBe(false);
  });

  it("follows the team's rotation of the session token, and signs a removed member out at once", async () => {
    const { jar } = await redeem(browser, await mailedLink("ed@magic.test"));
    const first = jar.cookies.get(SESSION_COOKIE);
    now = new Date(now.getTime() + 61 * MINUTE);
    expect((await get("/console/sessions", jar)).statusCode).toBe(200);
    expect(jar.cookies.get(SESSION_COOKIE)).not.toBe(first);
    // The old cookie keeps working for the rotation's grace only.
    const old = new Jar();
    old.cookies.set(SESSION_COOKIE, first!);
    expect((await get("/console/sessions", old)).statusCode).toBe(200);
    now = new Date(now.getTime() + 2 * MINUTE);
    expect((await get("/console/sessions", old)).statusCode).toBe(303);
    expect((await get("/console/sessions", jar)).statusCode).toBe(200);

    const ed = (await team.list("ws_ml")).find((m) => m.email === "ed@magic.test")!;
    await team.remove("ws_ml", ed.publicId!);
    const after = await get("/console/sessions", jar);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toMatch(/^\/console\/sign-in/);
  });
});
