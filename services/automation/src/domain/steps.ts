/**
 * Where a run goes next in a version's step tree. Branches rejoin: after the last step of a
 * condition's (or wait_for_event's) branch, the run continues with the step after the
 * condition; after the last top-level step, it completes.
 */
import type { Step } from "./model.js";

/** Where a step sits: its list, its index there, and the branching step owning that list (none at the top). */
interface Place {
  step: Step;
  siblings: readonly Step[];
  index: number;
  parent?: string;
}

const branchOf = (step: Step, branch: "then" | "else"): readonly Step[] | undefined =>
  step.type === "condition" || step.type === "wait_for_event" ? step[branch] : undefined;

export class StepTree {
  private readonly places = new Map<string, Place>();
  private readonly order: Step[] = [];

  constructor(private readonly steps: readonly Step[]) {
    const visit = (list: readonly Step[], parent?: string) =>
      list.forEach((step, index) => {
        // Ids are unique in a parsed definition; should one repeat anyway, the first wins.
        if (!this.places.has(step.id)) this.places.set(step.id, { step, siblings: list, index, parent });
        this.order.push(step);
        for (const branch of ["then", "else"] as const) {
          const inner = branchOf(step, branch);
          if (inner) visit(inner, step.id);
        }
      });
    visit(steps);
  }

  /** The step with this id; undefined when this version has none. */
  get(stepId: string): Step | undefined {
    return this.places.get(stepId)?.step;
  }

  /** The first step to run; undefined for an empty automation. */
  first(): Step | undefined {
    return this.steps[0];
  }

  /** The step after `stepId` once it completed (rejoining out of branches); undefined: the run completes. */
  after(stepId: string): Step | undefined {
    for (let place = this.places.get(stepId); place; place = place.parent === undefined ? undefined : this.places.get(place.parent)) {
      const next = place.siblings[place.index + 1];
      if (next) return next;
    }
    return undefined;
  }

  /** The first step of a branch of a condition or wait_for_event, or, if that branch is empty or absent, `after(stepId)`. */
  enterBranch(stepId: string, branch: "then" | "else"): Step | undefined {
    const step = this.get(stepId);
    const inner = step && branchOf(step, branch);
    return inner?.length ? inner[0] : this.after(stepId);
  }

  /** Every step depth first (a condition, its `then` steps, then its `else` steps). */
  all(): Step[] {
    return [...this.order];
  }
}
