export { validate, type ValidationIssue, type ValidationResult } from './validate.js';
export { RESOURCE_LIMITS } from './limits.js';
export { DNS_LABEL_RULE, isDnsLabel } from './dns-label.js';
export { nodeIdOf, parseNodeId, type NodeIdParse } from './node-id.js';
export { inboundListenerName, localClusterName, outboundListenerName, serviceResourceName } from './names.js';
export { generate, type GenerateError, type GenerateResult } from './generator.js';
export { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from './errors.js';
export {
  DEFAULT_MESH,
  keyOf,
  RESOURCE_TYPES,
  type Dataplane,
  type Inbound,
  type Mesh,
  type Outbound,
  type Resource,
  type ResourceKey,
  type ResourceType,
  type Valid,
} from './resources.js';
