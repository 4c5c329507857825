import type { FieldExplanation, NodePolicies, OutboundExplanation } from '../mesh/index.js';
import type { PolicyRef } from '../policies/index.js';
import { formatTable } from './format-table.js';

/**
 * `chancery inspect NODE --policies` as a person reads it: who selects the node, then per
 * inbound and outbound the routes, each field with its value, the policy that set it (or
 * `default`), those that lost, and what it became; then what was not applied and why, and
 * the errors of shares that had nowhere to go.
 */
export function describePolicies(explanation: NodePolicies): string {
  const lines = [
    `Node:        ${explanation.node}`,
    `Revision:    ${explanation.revision}`,
    `Selected by: ${explanation.selectedBy.length === 0 ? 'no policy' : explanation.selectedBy.map(label).join(', ')}`,
  ];
  for (const inbound of explanation.inbounds) {
    const callers = inbound.configuredForCallers.length === 0 ? '' : `; its callers apply ${inbound.configuredForCallers.map(label).join(', ')}`;
    lines.push('', `Inbound ${inbound.listener}: serves ${inbound.service}, protocol ${inbound.protocol} (${inbound.protocolFrom === 'tag' ? 'its tag' : 'the default'})${callers}`);
  }
  for (const outbound of explanation.outbounds) lines.push('', ...describeOutbound(`Outbound ${outbound.listener} → ${outbound.service} (Envoy)`, outbound));
  if (explanation.grpc.length > 0) {
    lines.push('', 'As a proxyless gRPC client (xds:///<service>); every other service gets the defaults:');
    for (const outbound of explanation.grpc) lines.push('', ...describeOutbound(`xds:///${outbound.service} (gRPC)`, outbound));
  }
  return `${lines.join('\n')}\n`;
}

function describeOutbound(title: string, outbound: OutboundExplanation): string[] {
  const { protocol } = outbound;
  const lines = [`${title}, protocol ${protocol.value}${protocol.note === undefined ? '' : `: ${protocol.note}`}`];
  lines.push(`  Policies: ${outbound.policies.length === 0 ? 'none; every field is the default' : outbound.policies.map(label).join(', ')}`);
  if (outbound.routes.length > 0) {
    lines.push('  Routes, in order:');
    const rows = outbound.routes.map((route) => [
      route.match,
      route.notApplied === undefined ? sharesOf(route.backends) : 'not applied',
      route.from === undefined ? 'default' : label(route.from),
      route.lost.map(label).join(', ') || '-',
    ]);
    lines.push(...indent(formatTable(['MATCH', 'TO', 'FROM', 'LOST'], rows)));
  }
  const applied = outbound.fields.filter((field) => field.notApplied === undefined);
  lines.push('  Fields:', ...indent(formatTable(['FIELD', 'VALUE', 'FROM', 'LOST', 'APPLIED AS'], applied.map(fieldRow))));
  const skipped = [
    ...outbound.fields.filter((field) => field.notApplied !== undefined).map((field) => `${field.policy} ${field.field} = ${show(field.value)} (${from(field)}): ${field.notApplied}`),
    ...outbound.routes.filter((route) => route.notApplied !== undefined).map((route) => `route ${route.match} (${from(route)}): ${route.notApplied}`),
  ];
  if (skipped.length > 0) lines.push('  Not applied to this client:', ...skipped.map((line) => `    ${line}`));
  if (outbound.errors.length > 0) lines.push('  Errors:', ...outbound.errors.map((error) => `    ${error}`));
  return lines;
}

function fieldRow(field: FieldExplanation): string[] {
  return [`${field.policy} ${field.field}`, show(field.value), from(field), field.lost.map(label).join(', ') || '-', field.as ?? ''];
}

/** Each backend's share of the route's requests, in percent. */
function sharesOf(backends: ReadonlyArray<{ readonly cluster: string; readonly weight: number }>): string {
  const total = backends.reduce((sum, { weight }) => sum + weight, 0);
  return backends.map(({ cluster, weight }) => `${cluster} ${Math.round((weight * 1_000) / total) / 10}%`).join(', ');
}

function from(source: { readonly from?: PolicyRef }): string {
  return source.from === undefined ? 'default' : label(source.from);
}

function label(ref: PolicyRef): string {
  return `${ref.type} ${ref.name}`;
}

function show(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}

function indent(table: string): string[] {
  return table
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`);
}
