/**
 * The section of a contact's page that lists the automation runs the contact is in, each step
 * with its times and the email a send step sent (the markup: views/automation-runs.ts, which
 * also has one automation's recent runs).
 *
 *   contactAutomationsSection(deps, request, id)  the contact page's section body (never throws:
 *                                                 without the automation unit it says so)
 */
import type { FastifyRequest } from "fastify";
import type { Automation } from "@mailroom/proto/automation/v1/automation_pb.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import type { ConsoleDeps } from "./deps.js";
import { sessionOf } from "./session.js";
import { contactRunsView } from "./views/automation-runs.js";
import { html, render } from "./views/html.js";

/** The contact page's "Automations" section: the runs it is in, newest first. */
export async function contactAutomationsSection(deps: ConsoleDeps, request: FastifyRequest, contactId: string): Promise<string> {
  const workspaceId = sessionOf(request).workspaceId;
  const opts = rpcOptions(request);
  try {
    const { runs } = await deps.clients.automation.listRuns({ workspaceId, automationId: "", contactId, page: { limit: 20 } }, opts);
    if (!runs.length) return render(html`<p class="muted">This contact is in no automation.</p>`);
    const ids = [...new Set(runs.map((r) => r.automationId))];
    const automations = new Map<string, Automation>();
    // A deleted automation is no longer found: its runs still show, by id.
    await Promise.all(ids.map((id) => deps.clients.automation.getAutomation({ workspaceId, automationId: id }, opts)
      .then((r) => { if (r.automation) automations.set(id, r.automation); }, () => undefined)));
    return render(contactRunsView(runs, automations));
  } catch (err) {
    request.log.warn({ err }, "automation runs not available");
    return render(html`<p class="muted">The automations are not available right now.</p>`);
  }
}
