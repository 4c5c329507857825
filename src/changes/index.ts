/**
 * Change safety (issue 31): what a write would do to every node before it lands, the warnings
 * of what causes outages, and how a write lands across the fleet. Pure functions of two
 * projections and the fleet's sessions, and the desk that runs them for the API.
 */
export { AT_ONCE, ChangeDesk, type ChangeDeskOptions, type DeskWriteOptions, type DeskWritten, type FleetSessions, type Run } from './change-desk.js';
export { InvalidSinceError, WarningsRefusedError } from './errors.js';
export { heldResources, type Held } from './held-resources.js';
export { ImpactCollector, impactOf, type Candidate, type Impact, type NodeImpact } from './impact.js';
export { fleetFactsOf, NO_FACTS, type FleetFacts, type NodeFacts, type SessionFacts, type TypeSubscription } from './node-facts.js';
export { typeImpacts, type ResourceRef, type TypeImpact, type TypeImpacts } from './node-impact.js';
export { itemJson, NODES_PAGE, previewAnswer, type ItemJson, type NodePage, type PreviewAnswer } from './preview.js';
export { warningsOf, type ChangeView, type ChangeWarning, type WarningKind } from './warnings.js';
export { nodeRollout, rolloutSummary, type NodeRollout, type PendingReason, type RolloutCounts, type RolloutSummary, type SessionProgress } from './rollout.js';
export { Rollouts, type RolloutAnswer, type RolloutScope, type RolloutsOptions, type RolloutWrite } from './rollouts.js';
export { resourceChanges, revertWrites, type ResourceChange } from './revision-diff.js';
export { writesOf, type WriteSummary } from './recent-writes.js';
