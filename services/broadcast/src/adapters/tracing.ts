/**
 * Traces of a broadcast's sending (DESIGN §9.10). Sending runs in the sender loop, long after
 * the request that scheduled it returned, a step at a time: each step that resolves the
 * audience or releases page jobs starts a trace of its own whose root span links to the
 * schedule request (OpenTelemetry links), so each page job's publish and delivery's handling
 * of it are in a trace an operator reaches from that request.
 */
import { inSpan, linksTo, type Link } from "@mailroom/kit/tracing.js";
import type { Broadcast } from "../domain/model.js";
import type { SendingStepScope } from "../domain/ports.js";

/** The root span of one sending step. */
export const SEND_STEP_SPAN = "broadcast send";

/** Links to the schedule request and, for an A/B test's rest, to a user's choice of the winner. */
export function sendingLinks(broadcast: Broadcast): Link[] {
  return [
    ...linksTo(broadcast.traceparent, { "mailroom.link": "scheduled_by" }),
    ...linksTo(broadcast.abTest?.winnerTraceparent, { "mailroom.link": "winner_chosen_by" }),
  ];
}

/** One sending step as the root of a new trace; with tracing off it only runs the step. */
export const sendingStepScope: SendingStepScope = (broadcast, step) =>
  inSpan(
    SEND_STEP_SPAN,
    {
      root: true,
      links: sendingLinks(broadcast),
      // Ids only: no audience, sender or content (DESIGN §9.10).
      attributes: {
        "mailroom.broadcast_id": broadcast.id,
        "mailroom.workspace_id": broadcast.workspaceId,
        "mailroom.broadcast_phase": broadcast.sending?.phase ?? "",
      },
    },
    () => step(),
  );
