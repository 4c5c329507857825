import type { TypeUrl } from '../type-urls.js';

/** The two ways a client speaks xDS on a stream: State of the World, or Delta (incremental). */
export const PROTOCOLS = ['sotw', 'delta'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** What a request of either protocol carries. */
export interface RequestBase {
  readonly typeUrl: string;
  readonly responseNonce: string;
  /** Present on a NACK (xDS: "NACK is indicated by the presence of error_detail"). */
  readonly errorDetail?: { readonly code: number; readonly message: string };
  /** Only the first request on a stream is guaranteed to carry it. */
  readonly nodeId?: string;
}

/** The parts of a SotW DiscoveryRequest Chancery reads. */
export interface XdsRequest extends RequestBase {
  readonly protocol: 'sotw';
  readonly versionInfo: string;
  readonly resourceNames: readonly string[];
}

/** The parts of a DeltaDiscoveryRequest Chancery reads. */
export interface DeltaRequest extends RequestBase {
  readonly protocol: 'delta';
  readonly subscribe: readonly string[];
  readonly unsubscribe: readonly string[];
  /** What the client holds from an earlier stream, name → version: only on a type's first request. */
  readonly initialVersions: Readonly<Record<string, string>>;
}

/** A request of either protocol; the stream it came on says which. */
export type StreamRequest = XdsRequest | DeltaRequest;

/** A request whose type URL Chancery serves: the server refuses any other before a ledger sees it. */
export type TypedRequest = StreamRequest & { readonly typeUrl: TypeUrl };
