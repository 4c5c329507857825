export { CERTIFICATE_TTL, validate, type ValidationIssue, type ValidationResult } from './validate.js';
export {
  authoritiesOf,
  authorityId,
  authorityOrdinal,
  certificateTtlOf,
  mtlsModeOf,
  notYetTrusting,
  renewalDue,
  RENEWAL_POINT,
  serviceSpiffeId,
  signingAuthority,
  spiffeIdsOf,
  spiffeTrustDomain,
  trustBundleOf,
  unreportedInbound,
} from './mesh-tls.js';
export { RESOURCE_LIMITS } from './limits.js';
export { DNS_LABEL_RULE, isDnsLabel } from './dns-label.js';
export { nodeIdOf, parseNodeId, type NodeIdParse } from './node-id.js';
export { IDENTITY_SECRET, SERVER_LISTENER_PREFIX, serverListenerName, inboundListenerName, localClusterName, outboundListenerName, serviceResourceName, trustSecretName } from './names.js';
export { CertificateNeededError, type NodeCertificate } from './tls-contexts.js';
export { inboundAcceptance, sameTlsFacts, tlsFactsOf, type InboundAcceptance, type SnapshotTlsFacts, type TlsFacts } from './tls-readiness.js';
export { generate, generatesAlike, type GenerateError, type GenerateResult } from './generator.js';
export { DataplaneNotFoundError, InvalidNodeIdError, MeshNotFoundError } from './errors.js';
export {
  API_ROLES,
  CONFIGURATION_TYPES,
  CREDENTIAL_TYPES,
  DATAPLANE_AUTH_MODES,
  DEFAULT_MESH,
  INBOUND_TLS,
  MTLS_MODES,
  isCredential,
  isMeshScoped,
  keyOf,
  RESOURCE_TYPES,
  type ApiRole,
  type ApiToken,
  type CertificateAuthority,
  type DataplaneTls,
  type InboundTls,
  type MeshMtls,
  type MtlsMode,
  type Status,
  type Configuration,
  type ConfigurationType,
  type Credential,
  type CredentialType,
  type DataplaneAuth,
  type ServiceAccountKey,
  type SigningKey,
  type Dataplane,
  type Inbound,
  type Mesh,
  type Outbound,
  type Resource,
  type ResourceKey,
  type ResourceType,
  type Valid,
} from './resources.js';
export {
  envoyBootstrap,
  grpcBootstrap,
  CERTIFICATE_PROVIDER,
  SERVER_LISTENER_TEMPLATE,
  XDS_CLUSTER,
  type EnvoyBootstrapOptions,
  type GrpcBootstrapOptions,
  type GrpcChannelCredentials,
  type XdsMode,
} from './bootstrap.js';
export { policyId, type GenerationInput, type Held, type MeshResources } from './generation-input.js';
export { chanceryMessageType, decodeResourceMessage, encodeResourceMessage, resourceJson, resourceMessageType } from './resource-schema.js';
export {
  explainPolicies,
  type ExplainResult,
  type InboundExplanation,
  type NodePolicies,
  type OutboundExplanation,
} from './policy-explanation.js';
export type { FieldExplanation } from './field-rows.js';
export type { Backend, ClientKind, RouteExplanation } from './route-plan.js';
export type { Protocol } from './protocols.js';
