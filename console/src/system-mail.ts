/**
 * The console's own mail: sign-in links and invitations, sent through Mailroom's send path
 * (the email service's SendEmail, as POST /v1/emails does) from the system sender
 * (MAILROOM_SYSTEM_FROM in MAILROOM_SYSTEM_WORKSPACE).
 *
 * Why a workspace of its own, not the member's: the mail holds a sign-in link, and whoever
 * may read a workspace's emails (any VIEWER, in the console's Emails page) could otherwise use
 * an owner's link. Tracking is off (no rewritten link, no pixel).
 *
 * The mail's markup is views/system-mail.ts.
 *
 * In development (capture mode, or NODE_ENV not production) every link is also logged at
 * info level, so a laptop without a system sender can still sign in.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { systemMailHtml } from "./views/system-mail.js";

export interface ConsoleMail {
  /** Whether links are emailed (a system sender is configured). */
  readonly sends: boolean;
  /** Whether links are also logged (development). */
  readonly logsLinks: boolean;
  /** Sends (and in development logs) a sign-in link; never throws (the page answers the same either way). */
  signInLink(request: FastifyRequest, to: string, url: string, expiresAt?: Date): Promise<void>;
  /** Sends (and in development logs) an invitation; resolves whether it was sent. */
  invitation(request: FastifyRequest, to: string, url: string, workspaceName: string, invitedBy: string): Promise<boolean>;
}

export function createConsoleMail(deps: GatewayDeps): ConsoleMail {
  const sender = deps.consoleSignIn?.systemSender;
  const logsLinks = !!deps.capturesMail || !deps.config.production;

  const send = async (request: FastifyRequest, to: string, subject: string, paragraphs: string[], url: string, button: string): Promise<boolean> => {
    if (!sender) return false;
    const html = systemMailHtml(paragraphs, url, button);
    const text = `${paragraphs.join("\n\n")}\n\n${button}: ${url}\n`;
    try {
      await deps.clients.email.sendEmail({
        workspaceId: sender.workspaceId,
        email: {
          to,
          content: { case: "raw", value: { from: sender.from, fromName: sender.fromName, subject, html, text } },
          settings: { trackClicks: false, trackOpens: false },
          groupBy: "console",
        },
      }, rpcOptions(request));
      return true;
    } catch (err) {
      // Logged without the link (a token); the console still answers as if sent.
      const code = errorInfoOf(err)?.code;
      if (code === "invalid_from" || code === "workspace_not_found" || (err instanceof ConnectError && err.code === Code.NotFound)) {
        // A configuration mistake, not a passing failure: say which setting.
        request.log.error({ err, workspaceId: sender.workspaceId, from: sender.from },
          "console mail refused: MAILROOM_SYSTEM_FROM must be an address MAILROOM_SYSTEM_WORKSPACE may send from (a verified domain or address of that workspace)");
      } else {
        request.log.warn({ err, workspaceId: sender.workspaceId }, "console mail not sent");
      }
      return false;
    }
  };

  return {
    sends: !!sender,
    logsLinks,
    async signInLink(request, to, url, expiresAt) {
      if (logsLinks) request.log.info({ to, url }, "console sign-in link (development: also printed here)");
      const minutes = expiresAt ? Math.max(1, Math.round((expiresAt.getTime() - Date.now()) / 60_000)) : 15;
      await send(request, to, "Your Mailroom sign-in link", [
        "Someone (hopefully you) asked to sign in to the Mailroom console with this address.",
        `The link works once, within ${minutes} minutes. If you did not ask for it, ignore this email.`,
      ], url, "Sign in to Mailroom");
    },
    async invitation(request, to, url, workspaceName, invitedBy) {
      if (logsLinks) request.log.info({ to, url }, "console invitation link (development: also printed here)");
      return send(request, to, `You are invited to ${workspaceName || "a workspace"} on Mailroom`, [
        `${invitedBy} invited you to the workspace ${workspaceName || ""} in the Mailroom console.`,
        "The invitation works once, within 72 hours.",
      ], url, "Accept the invitation");
    },
  };
}
