import type { FleetSessionHistory } from '../../api/index.js';
import { SESSION_STATES, type SessionView, type TransitionRecord, type TypeStatus } from '../../machines/index.js';
import { parseNodeId, type NodePolicies, type ResourceKey } from '../../mesh/index.js';
import { CLIENT_FLAGS, CLIENT_HELP, clientFrom } from '../client-options.js';
import { atMost, type Command, parseCommandLine } from '../command.js';
import { UsageError } from '../errors.js';
import { formatDocument, outputFormatOf } from '../format-output.js';
import { formatTable } from '../format-table.js';
import { describePolicies } from '../policy-explanation-output.js';
import { EXIT } from '../report-error.js';
import { resourcePath } from '../resource-paths.js';

const OPTIONS = {
  policies: { type: 'boolean' },
  state: { type: 'string' },
  mesh: { type: 'string' },
  fleet: { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  ...CLIENT_FLAGS,
} as const;

export const inspectCommand: Command = {
  name: 'inspect',
  summary: "show this instance's dataplane sessions, or one in detail",
  help: `Usage: chancery inspect [NODE] [--fleet] [--state STATE] [--mesh MESH] [-o table|json|yaml]
       chancery inspect NODE --policies [-o table|json|yaml]

Without NODE: a table of the sessions of the instance, with each type's state: ACK (the
last response was acknowledged), NACK (it was refused), sent (no answer yet) or - (nothing
sent). With NODE (<mesh>.<name>): its state, stream and protocol (State of the World or
Delta), per-type sent/ACKed/NACKed version and nonce, over Delta what the node holds of each
type (each resource with its version), the last NACK message, and the recent transitions as
a timeline.

With --policies: what the traffic policies did to NODE, from its Dataplane at the store's
current revision (whether or not it is connected): the policies that select it; per inbound
its protocol; per outbound (and per service a proxyless gRPC client of the node would dial)
the routes, and each field's value, the policy that set it or 'default', the policies that
lost on precedence, and what it became in Envoy's or gRPC's configuration; then what the
client does not honour and why, and errors such as a subset with no endpoints.

With --fleet: every instance sharing the store (each session with its INSTANCE), and for
NODE its story across instances, the transitions of each instance's session merged in time.

Options:
  --policies
      the effective policies of NODE, field by field
  --fleet
      the whole fleet rather than this instance
  --state STATE
      only sessions in this state: ${SESSION_STATES.join(', ')}
  --mesh MESH
      only sessions of this mesh
  -o, --output FORMAT
      table, json or yaml [default table]
${CLIENT_HELP}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 1);
    const [node] = positionals;
    const format = outputFormatOf(values.output);
    const client = clientFrom(values, io.env);

    if (values.policies === true) {
      if (node === undefined) throw new UsageError('--policies explains one node: give NODE (<mesh>.<name>)');
      if (values.fleet === true) throw new UsageError('--policies reads the store, the same on every instance: not with --fleet');
    }
    if (node !== undefined) {
      if (values.state !== undefined || values.mesh !== undefined) throw new UsageError('--state and --mesh filter the list; not with NODE');
      if (values.policies === true) {
        const explanation = (await client.request('GET', `${resourcePath(dataplaneKeyOf(node))}/policies`)).body as NodePolicies;
        io.stdout.write(format === 'table' ? describePolicies(explanation) : formatDocument(explanation, format));
        return EXIT.ok;
      }
      if (values.fleet === true) {
        const story = (await client.request('GET', `/sessions/${encodeURIComponent(node)}/history?scope=fleet`)).body as FleetSessionHistory;
        io.stdout.write(format === 'table' ? describeStory(story) : formatDocument(story, format));
        return EXIT.ok;
      }
      const view = (await client.request('GET', `/sessions/${encodeURIComponent(node)}`)).body as SessionView;
      io.stdout.write(format === 'table' ? describeSession(view) : formatDocument(view, format));
      return EXIT.ok;
    }
    const query = new URLSearchParams();
    if (values.fleet === true) query.set('scope', 'fleet');
    if (values.state !== undefined) query.set('state', values.state);
    if (values.mesh !== undefined) query.set('mesh', values.mesh);
    const path = query.size === 0 ? '/sessions' : `/sessions?${query}`;
    const { items } = (await client.request('GET', path)).body as { items: SessionView[] };
    if (format !== 'table') io.stdout.write(formatDocument(items, format));
    else if (items.length === 0) io.stderr.write(values.fleet === true ? 'No sessions in the fleet.\n' : 'No sessions on this instance.\n');
    else io.stdout.write(sessionTable(items, values.fleet === true));
    return EXIT.ok;
  },
};

const PROTOCOL_NAMES: Readonly<Record<NonNullable<SessionView['stream']>['protocol'], string>> = { sotw: 'State of the World', delta: 'Delta' };

function sessionTable(views: readonly SessionView[], withInstance: boolean): string {
  // Short names sort as CDS, EDS, LDS, RDS: the push order (I5).
  const types = [...new Set(views.flatMap((view) => Object.keys(view.types)))].sort();
  const withErrors = views.some((view) => view.error !== undefined);
  const header = ['NODE', ...(withInstance ? ['INSTANCE'] : []), 'STATE', 'REVISION', ...types, ...(withErrors ? ['ERROR'] : [])];
  const rows = views.map((view) => [
    view.node,
    ...(withInstance ? [view.instance] : []),
    view.state,
    view.revision === undefined ? '-' : String(view.revision),
    ...types.map((type) => markerOf(view.types[type])),
    ...(withErrors ? [view.error?.code ?? ''] : []),
  ]);
  return formatTable(header, rows);
}

/** Where the last response of a type stands: the latest nonce sent decides. */
function markerOf(status: TypeStatus | undefined): string {
  const sent = status?.sent;
  if (sent === undefined) return '-';
  if (status?.nacked?.nonce === sent.nonce) return 'NACK';
  if (status?.acked?.nonce === sent.nonce) return 'ACK';
  return 'sent';
}

function describeSession(view: SessionView): string {
  const lines = [
    `Node:      ${view.node}`,
    `State:     ${view.state}`,
    `Instance:  ${view.instance}`,
    `Stream:    ${view.stream === undefined ? '-' : `${view.stream.id} from ${view.stream.peer}, opened ${view.stream.openedAt}`}`,
    `Protocol:  ${view.stream === undefined ? '-' : PROTOCOL_NAMES[view.stream.protocol]}`,
    `Proven by: ${proofOf(view.stream?.authentication)}`,
    `Revision:  ${view.revision ?? '-'}`,
  ];
  if (view.error !== undefined) lines.push(`Error:     ${view.error.code}: ${view.error.message}`);
  lines.push(...describeCertificate(view));

  const types = Object.entries(view.types).sort(([a], [b]) => (a < b ? -1 : 1));
  const versionAndNonce = (entry: { version: string; nonce: string } | undefined) => (entry === undefined ? '-' : `${entry.version}/${entry.nonce}`);
  // Delta: a response carries only what changed, so what the node holds is told apart from it.
  const holds = types.some(([, status]) => status.held !== undefined);
  const table = formatTable(
    ['TYPE', 'SUBSCRIBED', 'SENT (version/nonce)', 'RESOURCES', ...(holds ? ['HELD'] : []), 'ACKED', 'NACKED'],
    types.map(([type, status]) => [
      type,
      subscriptionOf(status),
      versionAndNonce(status.sent),
      status.sent === undefined ? '-' : String(status.sent.resources),
      ...(holds ? [status.held === undefined ? '-' : String(Object.keys(status.held).length)] : []),
      versionAndNonce(status.acked),
      versionAndNonce(status.nacked),
    ]),
  );
  const held = types.flatMap(([type, status]) => Object.entries(status.held ?? {}).map(([name, version]) => [type, name, version]));
  const nacks = types.flatMap(([type, { nacked }]) =>
    nacked === undefined ? [] : [`Last NACK of ${type} (version ${nacked.version}, nonce ${nacked.nonce}, at ${nacked.at}):`, `  ${oneLine(nacked.message)}`],
  );
  const shortNames = new Map(types.map(([type, status]) => [status.typeUrl, type]));
  const timeline = view.transitions.map((transition) => `  ${stepOf(transition, shortNames)}`);

  return [
    ...lines,
    '',
    types.length === 0 ? 'Nothing subscribed yet.' : table.trimEnd(),
    ...(held.length > 0 ? ['', 'Held by the node:', formatTable(['TYPE', 'NAME', 'VERSION'], held).trimEnd()] : []),
    ...(nacks.length > 0 ? ['', ...nacks] : []),
    '',
    'Transitions (oldest first):',
    ...(timeline.length > 0 ? timeline : ['  none recorded']),
    '',
  ].join('\n');
}

/** A node's workload certificate, in a mesh with mTLS (docs/mtls.md); nothing otherwise. */
function describeCertificate(view: SessionView): string[] {
  const { certificate, certificateError } = view;
  const lines: string[] = [];
  if (certificate !== undefined) {
    lines.push(
      `Identity:  ${certificate.spiffeIds.join(', ')}`,
      `Certificate: serial ${certificate.serial}, issued by CA ${certificate.issuer}, valid until ${certificate.notAfter}, renewed at ${certificate.renewAt}`,
    );
  }
  if (certificateError !== undefined) lines.push(`Certificate error: ${oneLine(certificateError)} (the node keeps what it holds; tried again)`);
  if (view.inbound !== undefined) lines.push(`Inbound:   accepts ${view.inbound.accepts}${view.inbound.reason === undefined ? '' : `: ${view.inbound.reason}`}`);
  return lines;
}

function describeStory(story: FleetSessionHistory): string {
  const sessions = story.sessions.map(({ instance, state, recordedAt }) => `${instance} ${state} (${recordedAt === undefined ? 'live' : `saved ${recordedAt}`})`);
  const width = Math.max(...story.transitions.map(({ instance }) => instance.length));
  const timeline = story.transitions.map((transition) => `  ${stepOf(transition, new Map(), transition.instance.padEnd(width))}`);
  return [
    `Node:      ${story.node}`,
    `Sessions:  ${sessions.join(', ')}`,
    '',
    'Transitions across the fleet (oldest first):',
    ...(timeline.length > 0 ? timeline : ['  none recorded']),
    '',
  ].join('\n');
}

function subscriptionOf(status: TypeStatus): string {
  const names = status.subscription.wildcard ? ['*', ...status.subscription.names] : [...status.subscription.names];
  if (names.length === 0) return '-';
  return names.length <= 3 ? names.join(',') : `${names.slice(0, 3).join(',')},… (${names.length})`;
}

/** One row of a timeline; `instance` names where it happened, in a fleet's story. */
function stepOf(transition: TransitionRecord, shortNames: ReadonlyMap<string, string>, instance?: string): string {
  const move = transition.from === transition.to ? transition.to : `${transition.from} → ${transition.to}`;
  const facts = Object.entries(transition.detail ?? {}).map(([key, value]) =>
    key === 'typeUrl' ? (shortNames.get(String(value)) ?? String(value)) : `${key}=${oneLine(String(value))}`,
  );
  const where = instance === undefined ? '' : `  ${instance}`;
  return `${transition.at}${where}  ${move}  on ${transition.event}${facts.length > 0 ? `  ${facts.join(' ')}` : ''}`;
}

/** NACK messages from Envoy span lines; a timeline row must not. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/** How the node proved who it is, as `inspect` prints it. */
function proofOf(authentication: NonNullable<SessionView['stream']>['authentication'] | undefined): string {
  if (authentication === undefined) return '-';
  if (authentication.by === 'none') return 'nothing: its mesh does not ask';
  return `${authentication.by} (key ${authentication.key}), until ${authentication.expiresAt}`;
}

/** The Dataplane a node id names; a usage error for one that names none. */
function dataplaneKeyOf(node: string): ResourceKey {
  const id = parseNodeId(node);
  if (!id.ok) throw new UsageError(id.reason);
  return { type: 'Dataplane', mesh: id.mesh, name: id.name };
}
