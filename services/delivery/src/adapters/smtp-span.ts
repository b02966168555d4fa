/**
 * The SMTP attempt span (DESIGN §9.10): one CLIENT span `smtp send` per conversation with one
 * server — the relay, or in direct mode each MX host tried — under the active context (the
 * delivery job's span), naming the server and the reply it gave.
 *
 * The transports open it where the host is known (smtp-transport.ts, direct/transport.ts);
 * the route name comes from RoutedTransport through the context (`sendOnRoute`), so no transport
 * needs to be told which route it serves. Nothing of it runs while tracing is off: one check,
 * then the send as it was.
 *
 * Ids only: the delivery and workspace ids, never an envelope address or the reply's text
 * (a refusal's text often quotes the recipient).
 */
import { context, createContextKey } from "@opentelemetry/api";
import { inSpan, SpanKind, tracingOn, type Attributes } from "@mailroom/kit/tracing.js";
import { SmtpFailure, type MailTransport, type OutgoingMail, type SendResult } from "../domain/ports.js";

/** The route a mail is being sent on, set by RoutedTransport for the transports below it. */
const ROUTE_KEY = createContextKey("mailroom.route");

/** `transport.send(mail)` with `route` as the route of the SMTP attempts it makes (just the send when tracing is off). */
export function sendOnRoute(route: string, transport: MailTransport, mail: OutgoingMail): Promise<SendResult> {
  if (!tracingOn()) return transport.send(mail);
  return context.with(context.active().setValue(ROUTE_KEY, route), () => transport.send(mail));
}

export interface SmtpServerTarget {
  /** The relay's host, or the MX host's name in direct mode. */
  host: string;
  port: number;
  /** The address connected to, when it differs from the host (direct: the MX's A/AAAA). */
  address?: string;
}

/**
 * Runs one SMTP conversation inside an `smtp send` span: the reply code it ended with
 * (250, or the 4xx/5xx that refused it; none when no reply came), ERROR when it failed.
 */
export function smtpAttempt<T extends { code: number }>(server: SmtpServerTarget, meta: OutgoingMail["meta"], send: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return send();
  const attributes: Attributes = {
    "server.address": server.host,
    "server.port": server.port,
    "mailroom.delivery_id": meta.deliveryId,
    "mailroom.workspace_id": meta.workspaceId,
  };
  if (server.address && server.address !== server.host) attributes["network.peer.address"] = server.address;
  const route = context.active().getValue(ROUTE_KEY);
  if (typeof route === "string") attributes["mailroom.route"] = route;
  return inSpan("smtp send", { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      const reply = await send();
      span?.setAttribute("smtp.reply_code", reply.code);
      return reply;
    } catch (err) {
      // inSpan marks the span failed; the code says how (0: no reply, connection refused or cut).
      if (err instanceof SmtpFailure && err.code > 0) span?.setAttribute("smtp.reply_code", err.code);
      throw err;
    }
  });
}
