/**
 * The workspace settings page (/console/settings): the workspace's name and timezone (the
 * accounts unit's UpdateWorkspace), and what the workspace reads but does not set: its monthly
 * limit and this month's usage (GetUsage), the tracking defaults, the server's system sender
 * and any operator hold (sending paused, banned). The markup is views/settings.ts.
 *
 *   GET  /settings    everyone signed in sees the settings; the form only those who may post
 *   POST /settings    name and timezone; 303 back with a flash, or the form again with the error
 *
 * Who: owners and admins change settings (roles.ts, "POST /console/settings"). The monthly
 * limit is the operator's (`npx mailroom workspace update --limit`): the console never sends
 * it, so a workspace cannot raise its own limit. The timezone is checked as the accounts
 * unit checks it (an IANA zone the runtime knows) before the call, and the unit checks again.
 * No /v1 route changes a workspace: the form's checks are the console's own.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { isTimeZone } from "@mailroom/kit/time-zones.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { editable, html, str } from "../form-values.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { mayPost, seeOther, sessionOf, setFlash } from "../session.js";
import type { ConsoleSession } from "../types.js";
import { render } from "../views/html.js";
import { NAME_MAX, settingsView, type SettingsError, type SettingsValues } from "../views/settings.js";

export type { SettingsError, SettingsValues };

/** Checks the form as the accounts unit would; the field at fault and why, or undefined. */
export function checkSettings(values: SettingsValues): SettingsError | undefined {
  if (!values.name) return { field: "name", message: "Give the workspace a name." };
  if (values.name.length > NAME_MAX) return { field: "name", message: `The name is longer than ${NAME_MAX} characters.` };
  if (!isTimeZone(values.timezone)) {
    return { field: "timezone", message: `"${values.timezone}" is not an IANA time zone: use a name such as Europe/Paris, America/New_York or UTC.` };
  }
  return undefined;
}

/** The field a refusal of the accounts unit is about. */
const fieldOfCode = (code: string | undefined): SettingsError["field"] => (code === "invalid_timezone" ? "timezone" : code === "invalid_request" ? "name" : undefined);

export function registerSettingsPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const accounts = () => deps.clients.accounts;

  const page = async (request: FastifyRequest, flash?: Flash, values?: SettingsValues, error?: SettingsError) => {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [{ workspace }, usage] = await Promise.all([
      accounts().getWorkspace({ workspaceId: session.workspaceId }, opts),
      // The usage is shown, not needed: the page still answers without it.
      accounts().getUsage({ workspaceId: session.workspaceId }, opts).catch((err: unknown) => {
        request.log.warn({ err }, "console settings: usage unavailable");
        return undefined;
      }),
    ]);
    const ws = workspace!;
    const body = settingsView({
      workspace: ws, usage, systemSender: deps.consoleSignIn?.systemSender,
      form: mayPost(session, "/console/settings")
        ? { csrf: csrfField(session), values: values ?? { name: ws.name, timezone: ws.timezone || "UTC" }, error }
        : undefined,
    });
    // The header names the workspace as it is now (a session may have cached the old name).
    const shown: ConsoleSession = { ...session, workspaceName: ws.name || session.workspaceName };
    return consolePage({ title: "Settings", session: shown, active: "settings", flash, body: render(body) });
  };

  scope.get("/settings", async (request, reply) => html(reply, await page(request, request.consoleFlash)));

  scope.post("/settings", async (request, reply) => {
    const session = sessionOf(request);
    editable(request);
    const values: SettingsValues = { name: str(request.body, "name").trim().slice(0, 1024), timezone: str(request.body, "timezone").trim().slice(0, 200) };
    const invalid = checkSettings(values);
    if (invalid) return html(reply, await page(request, undefined, values, invalid), 400);
    try {
      await accounts().updateWorkspace({ workspaceId: session.workspaceId, name: values.name, timezone: values.timezone }, rpcOptions(request));
    } catch (err) {
      const e = bodyFromError(err);
      if (e.statusCode >= 500) throw err;
      return html(reply, await page(request, undefined, values, { field: fieldOfCode(e.code), message: e.message }), e.statusCode);
    }
    // This member's next page reads the new name (other sessions within the auth cache's time).
    if (session.memberId) deps.sessions.forget({ memberId: session.memberId });
    setFlash(reply, { kind: "ok", message: "Settings saved." });
    return seeOther(reply, consoleUrl("/settings"));
  });
}
