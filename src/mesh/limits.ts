/**
 * The largest resource validation accepts (issue 11), the same on every store. Names are DNS
 * labels (at most 63 characters, dns-label.ts); these bound the rest, so that a write costs
 * the store, the projection and every generation a known amount, whatever a client sends.
 */
export const RESOURCE_LIMITS = {
  /** Inbound listeners of one Dataplane. */
  inbound: 256,
  /** Outbound listeners of one Dataplane. */
  outbound: 1_024,
  /** Tags of one inbound, `service` included. */
  tags: 32,
  /** Characters of a tag key (a Kubernetes label key's 253). */
  tagKeyLength: 253,
  /** Characters of a tag value. */
  tagValueLength: 253,
  /** Bytes of a validated resource as JSON: what the event log keeps per write. */
  resourceBytes: 256 * 1024,
  /** Issues one validation lists; past it, one more issue counts the rest. */
  issues: 50,
} as const;
