/**
 * The sign-in pages moved to pages/sign-in.ts; this keeps the old import of team.ts working
 * (import linkRefusal from ./link-refusal.js instead, then delete this file).
 */
export { LINK_MESSAGES, linkRefusal } from "./link-refusal.js";
