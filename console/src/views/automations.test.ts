import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AutomationSchema, AutomationStatus, RunSchema, RunStatus } from "@mailroom/proto/automation/v1/automation_pb.js";
import { emptyDraft } from "../pages/automation-form.js";
import { automationFormView } from "./automation-form.js";
import { contactRunsView, runsTable } from "./automation-runs.js";
import { automationListView, automationPageView } from "./automations.js";

const HOSTILE = '"><script>alert(1)</script>';
const names = { groups: new Map([["grp_1", HOSTILE]]) };

describe("automations views", () => {
  const automation = create(AutomationSchema, {
    id: "aut_1", name: HOSTILE, status: AutomationStatus.ACTIVE, version: 2,
    triggerJson: JSON.stringify({ type: "group_joined", groupId: "grp_1" }),
    stepsJson: JSON.stringify([{ id: "s<1>", type: "send", template: HOSTILE }]),
  });

  it("escapes names in the list, its aria labels and confirmations", () => {
    const page = automationListView([automation], names, "").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain('aria-label="Pause &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(page).toContain('data-confirm="Delete the automation &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;? Its runs in progress exit."');
    expect(page).toContain("When a contact joins group &quot;&gt;&lt;script&gt;");
    expect(automationListView([automation], names, undefined).toString()).not.toContain("<form");
  });

  it("escapes the flow's step ids and words, and the runs", () => {
    const runs = runsTable([create(RunSchema, { id: "run_1", contactId: "ctc_1", status: RunStatus.ACTIVE, currentStepId: "s<1>" })], new Map([["ctc_1", HOSTILE]]), "runs-h");
    const page = automationPageView({
      automation, version: "all", names, runs, csrf: "",
      stats: { version: "all", versions: 2, steps: new Map(), gone: [{ id: "old<1>", type: "wait", counts: { entered: 1, waiting: 1, completed: 0, exited: 0 } }] },
    }).toString();
    expect(page).not.toContain("<script>alert");
    expect(page).toContain('<li class="flow-step" id="step-s&lt;1&gt;" data-step="s&lt;1&gt;" data-type="send">');
    expect(page).toContain('<tr data-gone-step="old&lt;1&gt;">');
    expect(page).toContain('<a href="#step-s&lt;1&gt;"><code>s&lt;1&gt;</code></a>');
    expect(page).toContain(">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</a></td>");
    expect(page).toContain('var url="/console/automations/aut_1/stats.json";');
    const contactRuns = contactRunsView([create(RunSchema, { id: "run_2", automationId: "aut_1", steps: [{ stepId: "a", type: "send", detail: HOSTILE }] })], new Map([["aut_1", automation]])).toString();
    expect(contactRuns).not.toContain("<script>");
    expect(contactRuns).toContain('<td data-label="Outcome">&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</td>');
  });

  it("puts the draft and the error back into the editor escaped", () => {
    const draft = { ...emptyDraft(), name: HOSTILE, steps: [{ id: HOSTILE, type: "condition", fields: { filter: "</textarea><script>alert(1)</script>" }, days: [], then: [], else: [] }] };
    const form = automationFormView(draft, {
      action: "/console/automations", cancelUrl: "/console/automations", csrf: "", submitLabel: "Create", templates: [HOSTILE], groups: [],
      filterFields: [], countUrl: "/console/segments/count.json", definitionJson: "</textarea>", error: { path: "steps[0].filter", message: HOSTILE },
    }).toString();
    expect(form).not.toContain("<script>alert");
    expect(form).toContain('id="name" name="name" required maxlength="200" value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(form).toContain('name="steps.0.id" value="&quot;&gt;&lt;script&gt;');
    expect(form).toContain('aria-describedby="filter-help">&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;</textarea>');
    expect(form).toContain('<p class="step-error" role="alert"><strong>steps[0].filter</strong>: &quot;&gt;&lt;script&gt;');
    expect(form).toContain('<option value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"></option>');
    expect(form).toContain('style="font-family:ui-monospace,monospace">&lt;/textarea&gt;</textarea>');
  });
});
