export { authenticateApiCaller, issueApiToken, publicApiToken, type ApiAuthentication, type ApiCaller, type ApiTokenRequest, type IssuedApiToken } from './api-tokens.js';
export { createCertificateAuthority, issueCertificate, namesOfCertificate, type CertifiedKey } from './certificate-authority.js';
export { credentialsChanged } from './credential-changes.js';
export type { CredentialStore } from './credential-store.js';
export { issueDataplaneToken, TOKEN_ISSUER, type DataplaneTokenRequest, type IssuedDataplaneToken } from './dataplane-tokens.js';
export { AuthorityInUseError, DataplaneUnauthenticatedError, InvalidIdentityRequestError, InvalidTokenLifetimeError, MtlsUnavailableError } from './errors.js';
export { recordAgentCertificate, signDataplaneCertificate, type SignedDataplaneCertificate } from './dataplane-certificates.js';
export { isKeyId, KEY_ID_RULE } from './key-pairs.js';
export { LIFETIMES, parseTtl } from './lifetimes.js';
export { RefusalLog, type RefusalSummary } from './refusal-log.js';
export { issueServiceAccount, publicServiceAccountKey, type IssuedServiceAccount, type ServiceAccountFile } from './service-accounts.js';
export { currentSigningKey, publicSigningKey, rotateSigningKey } from './signing-keys.js';
export { StreamAuthenticator, type StreamAuthenticatorOptions } from './stream-authenticator.js';
export { followTlsFiles, TlsFiles, TlsFilesError, type FollowedTlsFiles, type TlsFilePaths, type TlsMaterial } from './tls-files.js';
export {
  AUTHORITY_LIFETIME_MS,
  ensureMeshAuthority,
  meshAuthoritiesView,
  newMeshAuthority,
  removeMeshAuthority,
  rotateMeshAuthority,
  type AuthoritiesView,
  type AuthorityView,
} from './mesh-authorities.js';
export {
  CLOCK_SKEW_MS,
  InvalidCertificateRequestError,
  issueWorkloadCertificate,
  signCertificateRequest,
  type IssuedWorkloadCertificate,
  type WorkloadCertificate,
  type WorkloadCertificateRequest,
} from './workload-certificates.js';
export { MeshAuthorityKeeper } from './mesh-authority-keeper.js';
export { newCertificateRequest, type CertificateRequest } from './certificate-requests.js';
