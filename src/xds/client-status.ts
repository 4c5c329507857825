import { ChanceryError } from '../common/index.js';
import { lookupType } from './protos.js';

/**
 * The Client Status Discovery Service (envoy.service.status.v3): which configuration each node
 * was sent and whether it ACKed it, asked by standard tooling of the xDS server itself, as
 * Traffic Director answers it. The server only matches and encodes; the sessions say what holds.
 */

/** Where one resource stands for one node, from the server's side. */
export interface ClientResource {
  readonly typeUrl: string;
  readonly name: string;
  /** The `version_info` of the response that carried it; empty when it was never sent. */
  readonly version: string;
  /** The resource as sent: an encoded `google.protobuf.Any`. */
  readonly any?: Uint8Array;
  /** Epoch ms it was sent (or requested, when it never was). */
  readonly updatedAt: number;
  /** SYNCED: sent and ACKed; STALE: sent, no answer yet; ERROR: sent and NACKed; NOT_SENT: asked for, never sent. */
  readonly configStatus: 'SYNCED' | 'STALE' | 'ERROR' | 'NOT_SENT';
  /** The same, as the client's own status of the resource. */
  readonly clientStatus: 'ACKED' | 'NACKED' | 'REQUESTED';
  /** The NACK's message, while the node's last answer of the type is a NACK. */
  readonly error?: { readonly message: string; readonly at: number };
}

/** One node and what it was sent, per resource. */
export interface ClientStatus {
  readonly node: string;
  readonly resources: readonly ClientResource[];
}

/** The nodes the server can tell about: this instance's sessions that hold a stream. */
export interface ClientStatusSource {
  clients(): Iterable<ClientStatus>;
}

/** A ClientStatusRequest Chancery cannot answer as asked: the reason goes back as INVALID_ARGUMENT. */
export class UnsupportedNodeMatcherError extends ChanceryError {
  readonly code = 'CHANCERY_XDS_UNSUPPORTED_NODE_MATCHER';
}

interface StringMatcher {
  exact?: string;
  prefix?: string;
  suffix?: string;
  contains?: string;
  safe_regex?: { regex?: string };
  custom?: unknown;
  ignore_case?: boolean;
}

interface NodeMatcher {
  node_id?: StringMatcher;
  node_metadatas?: unknown[];
}

/** A regular expression longer than this is refused: matching is a loop over every session. */
const MAX_REGEX = 1_024;

/** Turns one `envoy.type.matcher.v3.NodeMatcher` into a test on node ids; throws on what it cannot test. */
function nodeMatch(matcher: NodeMatcher): (node: string) => boolean {
  if ((matcher.node_metadatas?.length ?? 0) > 0) {
    throw new UnsupportedNodeMatcherError('node_metadatas cannot be matched: Chancery keeps no node metadata; match on node_id');
  }
  const id = matcher.node_id;
  if (id === undefined) return () => true;
  const fold = id.ignore_case === true ? (text: string) => text.toLowerCase() : (text: string) => text;
  if (id.exact !== undefined && id.exact !== '') return (node) => fold(node) === fold(id.exact!);
  if (id.prefix) return (node) => fold(node).startsWith(fold(id.prefix!));
  if (id.suffix) return (node) => fold(node).endsWith(fold(id.suffix!));
  if (id.contains) return (node) => fold(node).includes(fold(id.contains!));
  if (id.safe_regex?.regex) {
    const { regex } = id.safe_regex;
    if (regex.length > MAX_REGEX) throw new UnsupportedNodeMatcherError(`node_id.safe_regex is longer than ${MAX_REGEX} characters`);
    let pattern: RegExp;
    try {
      // RE2 semantics are a subset of JavaScript's for what node ids need; the whole id must match.
      pattern = new RegExp(`^(?:${regex})$`, id.ignore_case === true ? 'i' : '');
    } catch (error) {
      throw new UnsupportedNodeMatcherError(`node_id.safe_regex is not a valid regular expression: ${(error as Error).message}`);
    }
    return (node) => pattern.test(node);
  }
  if (id.custom !== undefined) throw new UnsupportedNodeMatcherError('node_id.custom matchers are not supported; use exact, prefix, suffix, contains or safe_regex');
  // `exact: ""` is the proto default: it matches the empty id, which no node has.
  return (node) => node === '';
}

/**
 * Answers one ClientStatusRequest (bytes on the wire) from `source`: the clients any of its
 * node matchers selects (all of them without matchers), encoded as a ClientStatusResponse.
 */
export function answerClientStatus(request: Uint8Array, source: ClientStatusSource): Uint8Array {
  const requestType = lookupType('envoy.service.status.v3.ClientStatusRequest');
  const decoded = requestType.toObject(requestType.decode(request), { defaults: false }) as { node_matchers?: NodeMatcher[]; exclude_resource_contents?: boolean };
  const matchers = (decoded.node_matchers ?? []).map(nodeMatch);
  const withContents = decoded.exclude_resource_contents !== true;
  const config = [];
  for (const client of source.clients()) {
    if (matchers.length > 0 && !matchers.some((matches) => matches(client.node))) continue;
    config.push({ node: { id: client.node }, generic_xds_configs: client.resources.map((resource) => genericConfig(resource, withContents)) });
  }
  const responseType = lookupType('envoy.service.status.v3.ClientStatusResponse');
  return responseType.encode(responseType.fromObject({ config })).finish();
}

function genericConfig(resource: ClientResource, withContents: boolean): object {
  const anyType = lookupType('google.protobuf.Any');
  return {
    type_url: resource.typeUrl,
    name: resource.name,
    version_info: resource.version,
    ...(withContents && resource.any !== undefined && { xds_config: anyType.decode(resource.any) }),
    last_updated: timestamp(resource.updatedAt),
    config_status: resource.configStatus,
    client_status: resource.clientStatus,
    ...(resource.error !== undefined && { error_state: { details: resource.error.message, last_update_attempt: timestamp(resource.error.at) } }),
  };
}

function timestamp(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}
