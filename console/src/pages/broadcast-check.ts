/**
 * The pre-send check in the console (DESIGN §10.5): a panel beside a draft's preview with one
 * line per finding and where it is, run on demand (`?check=1`: it fetches every link and asks
 * SpamAssassin, seconds rather than milliseconds), and the schedule's confirmation while the
 * check finds errors: scheduling shows them and asks again before anything is scheduled.
 * broadcasts.ts calls the two hooks below; the check itself is the broadcast unit's. The markup
 * is views/broadcast-check.ts.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { PreSendCheck } from "@mailroom/proto/broadcast/v1/check_pb.js";
import { bodyFromError } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { checkJson } from "@mailroom/http/pre-send-check-schema.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { consolePage } from "../layout.js";
import { sessionOf } from "../session.js";
import { render, type Html } from "../views/html.js";
import { checkPanelView, confirmScheduleView, type Check } from "../views/broadcast-check.js";

/** The field a schedule form carries once its sender saw the errors and confirmed. */
export const CONFIRM_FIELD = "confirmCheckErrors";
/** What a schedule form posts, carried over to the confirmation's form. */
const SCHEDULE_FIELDS = ["when", "sendAt", "deliveryMethod"];

const field = (body: unknown, name: string): string => {
  const v = (body as Record<string, unknown> | undefined)?.[name];
  return typeof v === "string" ? v : Array.isArray(v) ? String(v[0] ?? "") : "";
};

async function runCheck(deps: ConsoleDeps, request: FastifyRequest, id: string): Promise<{ ok: true; check: Check } | { ok: false; message: string }> {
  try {
    const res = await deps.clients.check.checkBroadcast({ workspaceId: sessionOf(request).workspaceId, id }, rpcOptions(request));
    return { ok: true, check: checkJson(res.check as PreSendCheck) };
  } catch (err) {
    return { ok: false, message: bodyFromError(err).message };
  }
}

/**
 * The panel of a draft's page: the check's findings when the page was asked for with
 * `check=1`, else a button that asks for it.
 */
export async function checkPanel(deps: ConsoleDeps, request: FastifyRequest, b: Broadcast, contact: string): Promise<Html> {
  if (field(request.query, "check") !== "1") return checkPanelView(b, contact, { asked: false });
  return checkPanelView(b, contact, { asked: true, ...(await runCheck(deps, request, b.id)) });
}

/**
 * The schedule form's hook: when the check finds errors and the sender has not confirmed yet,
 * answers a page that lists them and asks again (its form carries the same choices and the
 * confirmation) and says true; else false and scheduling goes on. A check that cannot run holds nothing.
 */
export async function confirmScheduleDespiteErrors(deps: ConsoleDeps, request: FastifyRequest, reply: FastifyReply, b: Broadcast): Promise<boolean> {
  if (field(request.body, CONFIRM_FIELD) === "1") return false;
  const run = await runCheck(deps, request, b.id);
  if (!run.ok || run.check.errors.length === 0) return false;
  const session = sessionOf(request);
  const carried = SCHEDULE_FIELDS.map((name): [string, string] => [name, field(request.body, name)]);
  const body = render(confirmScheduleView(b, run.check.errors, carried, CONFIRM_FIELD, csrfField(session)));
  // A boolean, not the reply: a FastifyReply is thenable, and awaiting it would wait for the answer to finish.
  reply.code(200).type("text/html; charset=utf-8").send(consolePage({ title: "Check found errors", session, active: "broadcasts", body }));
  return true;
}
