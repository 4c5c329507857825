// What the traffic policies did to a node (`GET /meshes/{mesh}/dataplanes/{name}/policies`),
// as `chancery inspect NODE --policies` prints it: per outbound the routes and each field with
// the policy that set it (or the default), those that lost, and what it became; then what the
// client does not honour, and errors.

import { h, replace } from './dom.js';

const label = (ref) => `${ref.type} ${ref.name}`;
const fromOf = (source) => (source.from === undefined ? 'default' : label(source.from));
const lostOf = (source) => source.lost.map(label).join(', ') || '–';
const show = (value) => (Array.isArray(value) ? value.join(',') : String(value));

export function policiesPanel() {
  const el = h('section', { class: 'panel policies', 'aria-labelledby': 'policies-title', hidden: true });

  /** Shows an explanation; hides the panel when there is none (no Dataplane for the node). */
  function show(explanation) {
    el.hidden = explanation === undefined;
    if (explanation === undefined) return;
    const selected = explanation.selectedBy.length === 0 ? 'no policy' : explanation.selectedBy.map(label).join(', ');
    replace(
      el,
      h('h2', { id: 'policies-title' }, 'Policies ', h('span', { class: 'muted' }, `(revision ${explanation.revision}; selected by ${selected})`)),
      explanation.inbounds.map((inbound) =>
        h('p', { class: 'inbound' }, h('strong', {}, inbound.listener), ` serves ${inbound.service}, protocol ${inbound.protocol} (${inbound.protocolFrom === 'tag' ? 'its tag' : 'the default'})`),
      ),
      explanation.outbounds.map((outbound) => outboundSection(`${outbound.listener} → ${outbound.service} (Envoy)`, outbound)),
      explanation.grpc.map((outbound) => outboundSection(`xds:///${outbound.service} (proxyless gRPC)`, outbound)),
    );
  }

  return { el, show };
}

function outboundSection(title, outbound) {
  const applied = outbound.fields.filter((field) => field.notApplied === undefined);
  const skipped = [
    ...outbound.fields.filter((field) => field.notApplied !== undefined).map((field) => `${field.policy} ${field.field} = ${show(field.value)} (${fromOf(field)}): ${field.notApplied}`),
    ...outbound.routes.filter((route) => route.notApplied !== undefined).map((route) => `route ${route.match} (${fromOf(route)}): ${route.notApplied}`),
  ];
  const total = (backends) => backends.reduce((sum, { weight }) => sum + weight, 0);
  return h(
    'details',
    { class: 'outbound', 'data-service': outbound.service, 'data-client': outbound.client, open: true },
    h('summary', {}, h('strong', {}, title), ` · protocol ${outbound.protocol.value}`, outbound.protocol.note && h('span', { class: 'muted' }, ` (${outbound.protocol.note})`)),
    outbound.routes.length > 0 &&
      table(
        ['Match', 'To', 'From', 'Lost'],
        outbound.routes.map((route) => [
          route.match,
          route.notApplied === undefined ? route.backends.map(({ cluster, weight }) => `${cluster} ${Math.round((weight * 1000) / total(route.backends)) / 10}%`).join(', ') : 'not applied',
          fromOf(route),
          lostOf(route),
        ]),
        'routes',
      ),
    table(
      ['Field', 'Value', 'From', 'Lost', 'Applied as'],
      applied.map((field) => [`${field.policy} ${field.field}`, show(field.value), fromOf(field), lostOf(field), field.as ?? '']),
      'fields',
    ),
    skipped.length > 0 && h('div', { class: 'not-applied' }, h('h3', {}, 'Not applied to this client'), h('ul', {}, skipped.map((line) => h('li', {}, line)))),
    outbound.errors.length > 0 && h('div', { class: 'notice error' }, h('h3', {}, 'Errors'), h('ul', {}, outbound.errors.map((line) => h('li', {}, line)))),
  );
}

function table(headings, rows, kind) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: kind },
      h('thead', {}, h('tr', {}, headings.map((name) => h('th', { scope: 'col' }, name)))),
      h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}
