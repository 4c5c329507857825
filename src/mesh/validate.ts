import { isIP } from 'node:net';
import { fieldPath, parseAge, textProblem } from '../common/index.js';
import { RESOURCE_LIMITS } from './limits.js';
import { PROTOCOL_TAG, PROTOCOLS } from './protocols.js';
import { isPolicyType } from '../policies/index.js';
import { readPolicy } from './validate-policy.js';
import { Issues, isFields, readLabel, readList, readObject, rejectUnknown, type Fields, type ValidationIssue } from './validation-readers.js';
import {
  CONFIGURATION_TYPES,
  DATAPLANE_AUTH_MODES,
  MTLS_MODES,
  type Configuration,
  type Dataplane,
  type DataplaneAuth,
  type Inbound,
  type Mesh,
  type MeshMtls,
  type MtlsMode,
  type Outbound,
  type Valid,
} from './resources.js';

export type { ValidationIssue } from './validation-readers.js';

export type ValidationResult =
  | { readonly ok: true; readonly resource: Valid<Configuration> }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

// Unknown fields are refused at every level, so a typo (`inbounds`) is an error rather than
// a dataplane silently configured without what the user meant.
const MESH_FIELDS = ['type', 'name', 'dataplaneAuth', 'mtls'];
const MTLS_FIELDS = ['mode', 'certificateTTL'];
const DATAPLANE_FIELDS = ['type', 'mesh', 'name', 'networking'];
const NETWORKING_FIELDS = ['address', 'inbound', 'outbound'];
const INBOUND_FIELDS = ['port', 'servicePort', 'tags'];
const OUTBOUND_FIELDS = ['port', 'service'];

const PORT_RULE = 'must be an integer from 1 to 65535';

/**
 * Checks a resource as written by a user (API body, `chancery apply` file) and returns every
 * issue found (the first `RESOURCE_LIMITS.issues` of them), or the normalised resource:
 * frozen, `servicePort` filled in, `inbound` and `outbound` present, tags sorted. Only a
 * `Valid` resource can be stored or generated from, and every store keeps it exactly (issue 11).
 */
export function validate(input: unknown): ValidationResult {
  const issues = new Issues();
  const resource = readResource(input, issues);
  if (resource === undefined || issues.count > 0) return { ok: false, issues: issues.listed() };
  return { ok: true, resource };
}

function readResource(input: unknown, issues: Issues): Valid<Configuration> | undefined {
  const fields = readObject(input, '', issues);
  if (fields === undefined) return undefined;
  switch (fields.type) {
    case 'Mesh':
      return readMesh(fields, issues);
    case 'Dataplane':
      return readDataplane(fields, issues);
    case undefined:
      return issues.add('type', 'is required');
    default:
      if (typeof fields.type === 'string' && isPolicyType(fields.type)) return readPolicy(fields, issues);
      return issues.add('type', `must be one of ${CONFIGURATION_TYPES.map((type) => `"${type}"`).join(', ')}`);
  }
}

function readMesh(fields: Fields, issues: Issues): Valid<Mesh> | undefined {
  rejectUnknown(fields, MESH_FIELDS, '', 'a Mesh', issues);
  const name = readLabel(fields.name, 'name', issues);
  const dataplaneAuth = readDataplaneAuth(fields.dataplaneAuth, issues);
  const mtls = fields.mtls === undefined ? undefined : readMtls(fields.mtls, 'mtls', issues);
  if (name === undefined || dataplaneAuth === undefined || issues.count > 0) return undefined;
  const mesh: Mesh = { type: 'Mesh', name, dataplaneAuth, ...(mtls !== undefined && { mtls }) };
  return Object.freeze(mesh) as Valid<Mesh>;
}

/** The shortest and longest workload certificate a mesh may ask for: 30 s lets tests renew quickly. */
export const CERTIFICATE_TTL = { min: 30_000, max: 90 * 86_400_000, default: '24h' } as const;

function readMtls(value: unknown, path: string, issues: Issues): MeshMtls | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, MTLS_FIELDS, path, 'mtls', issues);
  let mode: MtlsMode | undefined = 'disabled';
  if (fields.mode !== undefined) {
    mode = typeof fields.mode === 'string' && (MTLS_MODES as readonly string[]).includes(fields.mode) ? (fields.mode as MtlsMode) : undefined;
    if (mode === undefined) issues.add(`${path}.mode`, `must be one of ${MTLS_MODES.map((each) => `"${each}"`).join(', ')}`);
  }
  const ttl = fields.certificateTTL ?? CERTIFICATE_TTL.default;
  const ms = typeof ttl === 'string' ? parseAge(ttl) : undefined;
  if (ms === undefined || ms < CERTIFICATE_TTL.min || ms > CERTIFICATE_TTL.max) {
    issues.add(`${path}.certificateTTL`, 'must be a duration such as 30s, 90m, 24h or 30d, from 30s to 90d');
  }
  if (mode === undefined || issues.count > before) return undefined;
  return Object.freeze({ mode, certificateTTL: (ttl as string).trim() });
}

/**
 * A mesh written without saying requires tokens: secure unless asked otherwise. Only the
 * `default` mesh a fresh store creates is `none`, so the walk-through works on loopback.
 */
function readDataplaneAuth(value: unknown, issues: Issues): DataplaneAuth | undefined {
  if (value === undefined) return 'token';
  if (typeof value === 'string' && (DATAPLANE_AUTH_MODES as readonly string[]).includes(value)) return value as DataplaneAuth;
  return issues.add('dataplaneAuth', `must be one of ${DATAPLANE_AUTH_MODES.map((mode) => `"${mode}"`).join(', ')}`);
}

function readDataplane(fields: Fields, issues: Issues): Valid<Dataplane> | undefined {
  rejectUnknown(fields, DATAPLANE_FIELDS, '', 'a Dataplane', issues);
  const mesh = readLabel(fields.mesh, 'mesh', issues);
  const name = readLabel(fields.name, 'name', issues);
  const networking = readNetworking(fields.networking, 'networking', issues);
  if (mesh === undefined || name === undefined || networking === undefined || issues.count > 0) return undefined;
  const dataplane: Dataplane = { type: 'Dataplane', mesh, name, networking };
  // Each field is bounded; this bounds their sum, what the log keeps per write.
  const bytes = Buffer.byteLength(JSON.stringify(dataplane));
  if (bytes > RESOURCE_LIMITS.resourceBytes) {
    return issues.add('', `is ${bytes} bytes as JSON; a Dataplane may have at most ${RESOURCE_LIMITS.resourceBytes}`);
  }
  return Object.freeze(dataplane) as Valid<Dataplane>;
}

function readNetworking(value: unknown, path: string, issues: Issues): Dataplane['networking'] | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, NETWORKING_FIELDS, path, 'networking', issues);
  const address = readAddress(fields.address, `${path}.address`, issues);
  const inbound = readList(fields.inbound, `${path}.inbound`, RESOURCE_LIMITS.inbound, issues, readInbound);
  const outbound = readList(fields.outbound, `${path}.outbound`, RESOURCE_LIMITS.outbound, issues, readOutbound);
  checkPortsDistinct(fields, path, issues);
  if (address === undefined || inbound === undefined || outbound === undefined || issues.count > before) {
    return undefined;
  }
  return Object.freeze({ address, inbound, outbound });
}

function readInbound(value: unknown, path: string, issues: Issues): Inbound | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, INBOUND_FIELDS, path, 'an inbound', issues);
  const port = readPort(fields.port, `${path}.port`, issues);
  const servicePort = fields.servicePort === undefined ? port : readPort(fields.servicePort, `${path}.servicePort`, issues);
  const tags = readTags(fields.tags, `${path}.tags`, issues);
  if (port === undefined || servicePort === undefined || tags === undefined || issues.count > before) return undefined;
  return Object.freeze({ port, servicePort, tags });
}

function readOutbound(value: unknown, path: string, issues: Issues): Outbound | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const before = issues.count;
  rejectUnknown(fields, OUTBOUND_FIELDS, path, 'an outbound', issues);
  const port = readPort(fields.port, `${path}.port`, issues);
  // The service names the EDS cluster the outbound routes to.
  const service = readLabel(fields.service, `${path}.service`, issues);
  if (port === undefined || service === undefined || issues.count > before) return undefined;
  return Object.freeze({ port, service });
}

function readTags(value: unknown, path: string, issues: Issues): Inbound['tags'] | undefined {
  const fields = readObject(value, path, issues);
  if (fields === undefined) return undefined;
  const keys = Object.keys(fields);
  if (keys.length > RESOURCE_LIMITS.tags) return issues.add(path, `must have at most ${RESOURCE_LIMITS.tags} tags; it has ${keys.length}`);
  const before = issues.count;
  // tags.service becomes resource names and an `xds:///<service>` target (DESIGN §6).
  const service = readLabel(fields.service, `${path}.service`, issues);
  const tags: Array<[string, string]> = [];
  for (const key of keys.sort()) {
    if (key === 'service') {
      if (service !== undefined) tags.push([key, service]);
      continue;
    }
    const tagPath = fieldPath(path, key);
    const keyProblem = key === '' ? 'must not be empty' : textProblem(key, RESOURCE_LIMITS.tagKeyLength);
    if (keyProblem !== undefined) {
      issues.add(tagPath, `the tag key ${keyProblem}`);
      continue;
    }
    const tag = fields[key];
    if (typeof tag !== 'string') {
      issues.add(tagPath, 'must be a string');
      continue;
    }
    const valueProblem = key === PROTOCOL_TAG ? protocolProblem(tag) : textProblem(tag, RESOURCE_LIMITS.tagValueLength);
    if (valueProblem === undefined) tags.push([key, tag]);
    else issues.add(tagPath, valueProblem);
  }
  if (service === undefined || issues.count > before) return undefined;
  // fromEntries defines each key as the object's own, `__proto__` included, as JSON.parse does.
  return Object.freeze({ ...Object.fromEntries(tags), service });
}

/** The tag `protocol` says how callers reach the service (protocols.ts): one of a few words. */
function protocolProblem(tag: string): string | undefined {
  return (PROTOCOLS as readonly string[]).includes(tag) ? undefined : `must be one of ${PROTOCOLS.map((each) => `"${each}"`).join(', ')}`;
}

/** Inbound listeners bind `<address>:<port>` and outbound ones `127.0.0.1:<port>`: no port twice. */
function checkPortsDistinct(fields: Fields, path: string, issues: Issues): void {
  const firstUse = new Map<number, string>();
  for (const direction of ['inbound', 'outbound'] as const) {
    const list = fields[direction];
    if (!Array.isArray(list) || list.length > RESOURCE_LIMITS[direction]) continue;
    list.forEach((entry: unknown, index) => {
      const port = isFields(entry) ? entry.port : undefined;
      if (!isPort(port)) return;
      const here = `${path}.${direction}[${index}].port`;
      const first = firstUse.get(port);
      if (first === undefined) firstUse.set(port, here);
      else issues.add(here, `port ${port} is already used by ${first}`);
    });
  }
}

function readPort(value: unknown, path: string, issues: Issues): number | undefined {
  if (value === undefined) return issues.add(path, 'is required');
  return isPort(value) ? value : issues.add(path, PORT_RULE);
}

function readAddress(value: unknown, path: string, issues: Issues): string | undefined {
  if (value === undefined) return issues.add(path, 'is required');
  if (typeof value !== 'string') return issues.add(path, 'must be a string');
  // It becomes an EDS endpoint address, and gRPC refuses hostnames there (NACK "not a valid
  // IPv4 or IPv6 address").
  return isIP(value) === 0 ? issues.add(path, 'must be an IPv4 or IPv6 address') : value;
}

function isPort(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}

