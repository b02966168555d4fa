/**
 * Traces of work the email service does later than the request that asked for it (DESIGN
 * §9.10). A scheduled email is released minutes or days after its request's trace ended, so
 * its release starts a trace of its own whose root span links to that request (OpenTelemetry
 * links): the delivery job's publish, delivery's handling and the SMTP attempt are below it.
 */
import { inSpan, linksTo } from "@mailroom/kit/tracing.js";
import type { ReleaseScope } from "../domain/ports.js";

/** The root span's name: one per released email. */
export const SCHEDULED_SEND_SPAN = "email scheduled send";

/**
 * The scheduler's release of one email as the root of a new trace, linked to the request
 * that created it (none when tracing was off then). With tracing off it only calls `release`.
 */
export const scheduledSendScope: ReleaseScope = (email, release) =>
  inSpan(
    SCHEDULED_SEND_SPAN,
    {
      root: true,
      links: linksTo(email.traceparent, { "mailroom.link": "created_by" }),
      // Ids only: no recipient, sender or subject (DESIGN §9.10).
      attributes: { "mailroom.email_id": email.id, "mailroom.workspace_id": email.workspaceId, "mailroom.scheduled": email.sendAt !== undefined },
    },
    () => release(),
  );
