/**
 * The webhook targets' SSRF guard (DESIGN.md §9.2) is kit's NetworkPolicy, shared with the
 * broadcast unit's pre-send link check (§10.5); re-exported here for the webhooks unit's modules.
 */
export { hostOf, NetworkPolicy, parseAllowNetworks, TargetRefusedError, type Lookup } from "@mailroom/kit/network-policy.js";
