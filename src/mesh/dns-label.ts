const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Why a value is not a DNS label; the reason validation and node id parsing report. */
export const DNS_LABEL_RULE =
  'must be a DNS label: 1 to 63 lowercase letters, digits or "-", starting and ending with a letter or digit';

/**
 * True for an RFC 1123 label. Mesh, dataplane and service names are labels because they
 * become parts of node ids (`<mesh>.<name>`), xDS resource names and `xds:///<service>`
 * targets, where a dot, a colon or a slash would change the meaning.
 */
export function isDnsLabel(value: unknown): value is string {
  return typeof value === 'string' && DNS_LABEL.test(value);
}
