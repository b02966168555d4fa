/**
 * Where a run goes next in a version's step tree. Branches rejoin: after the last step of a
 * condition's (or wait_for_event's) branch, the run continues with the step after the
 * condition; after the last top-level step, it completes.
 */
import type { Step } from "./model.js";

export declare class StepTree {
  constructor(steps: readonly Step[]);
  /** The step with this id; undefined when this version has none. */
  get(stepId: string): Step | undefined;
  /** The first step to run; undefined for an empty automation. */
  first(): Step | undefined;
  /** The step after `stepId` once it completed (rejoining out of branches); undefined: the run completes. */
  after(stepId: string): Step | undefined;
  /** The first step of a branch of a condition or wait_for_event, or, if that branch is empty or absent, `after(stepId)`. */
  enterBranch(stepId: string, branch: "then" | "else"): Step | undefined;
  /** Every step depth first (a condition, its `then` steps, then its `else` steps). */
  all(): Step[];
}
