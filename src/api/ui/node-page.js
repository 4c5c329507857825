// One node's story: where it is in the chart and how it got there, what each type was sent,
// ACKed and NACKed, and the configuration last sent. Kept current by the node's live feed.
// When other instances have a session for the node, its story across the fleet too, asked
// for again every few seconds (their changes come through no feed).

import { getJson, getText, openFeed } from './api.js';
import { outcomeBadge, stateBadge } from './badges.js';
import { takenBy } from './chart-walk.js';
import { h, parseSvg, replace } from './dom.js';
import { policiesPanel } from './policies-panel.js';
import { refreshWhileVisible } from './refresh-while-visible.js';
import { ago, count, timeOf, TYPES } from './session-status.js';

/** How often the story across the fleet is asked for again. */
const FLEET_REFRESH_MS = 2000;

/** The chart is the same for every node: fetched once per page load. */
let chart;
/** `GET /statechart?format=json`, fetched once per page load. */
let model;
function chartSvg() {
  chart ??= getText('/statechart?format=svg').catch(() => undefined);
  return chart;
}

/** The chart as data: which state is inside which, and what each drawn edge (`t<n>`) stands for. */
function chartModel() {
  model ??= getJson('/statechart?format=json')
    .then(({ status, body }) => (status === 200 ? body : undefined))
    .catch(() => undefined);
  return model;
}

export function nodePage({ main, setLive }, node) {
  let view;
  /** The chart as data, to map the story onto the drawing. */
  let statechart;
  /** `GET /sessions/{node}/xds`, and which versions and nonces it shows. */
  let config;
  let configKey = '';
  let missing = false;
  let error;
  /** `GET /sessions/{node}/history?scope=fleet`; undefined when no live instance has the node. */
  let fleet;
  let fleetError;
  let fleetLoading = false;

  const headEl = h('div', { class: 'node-head' });
  const noticeEl = h('div', { class: 'notice-slot', role: 'status' });
  const countsEl = h('section', { class: 'resource-counts', 'aria-label': 'Resources last sent' });
  const figureEl = h('figure', { class: 'chart' });
  const timelineEl = h('ol', { class: 'timeline' });
  const typesEl = h('div', { class: 'table-wrap' });
  const configEl = h('div', { class: 'config' });
  const fleetSessionsEl = h('ul', { class: 'fleet-sessions' });
  const fleetTimelineEl = h('ol', { class: 'fleet-timeline' });
  // What the policies did to the node: read from the store, so shown whether or not it is connected.
  const policies = policiesPanel();
  let policiesRevision;
  const fleetEl = h(
    'section',
    { class: 'panel fleet-story', 'aria-labelledby': 'fleet-story-title', hidden: true },
    h('h2', { id: 'fleet-story-title' }, 'Across the fleet ', h('span', { class: 'muted' }, '(other instances as they last saved it)')),
    h(
      'div',
      { class: 'columns' },
      h('div', {}, h('h3', {}, 'Sessions'), fleetSessionsEl),
      h('div', {}, h('h3', {}, 'Timeline ', h('span', { class: 'muted' }, '(newest first)')), fleetTimelineEl),
    ),
  );
  // What this instance knows of its own session: hidden while it has none to show.
  const localEl = h(
    'div',
    { hidden: true },
    countsEl,
    h('section', { class: 'panel' }, h('h2', {}, 'State chart'), figureEl),
    h('section', { class: 'panel' }, h('h2', {}, 'xDS types'), typesEl),
    h(
      'div',
      { class: 'columns' },
      h('section', { class: 'panel' }, h('h2', {}, 'Timeline ', h('span', { class: 'muted' }, '(newest first)')), timelineEl),
      h('section', { class: 'panel' }, h('h2', {}, 'Configuration last sent'), configEl),
    ),
  );
  replace(
    main,
    h('nav', { class: 'breadcrumb', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, '← Fleet')),
    headEl,
    noticeEl,
    fleetEl,
    localEl,
    policies.el,
  );
  document.title = `${node} · Chancery`;

  /** Everything the page shows, fetched again on every (re)connect of the feed: changes in between were missed. */
  async function load() {
    try {
      const [session, sent, svg, chartData] = await Promise.all([
        getJson(`/sessions/${encodeURIComponent(node)}`),
        getJson(`/sessions/${encodeURIComponent(node)}/xds`),
        chartSvg(),
        chartModel(),
        loadFleet(),
        loadPolicies(),
      ]);
      statechart = chartData;
      error = session.status === 200 || session.status === 404 ? undefined : session.body.reason;
      missing = session.status === 404;
      if (session.status === 200) view = session.body;
      if (sent.status === 200) setConfig(sent.body);
      if (svg !== undefined && !figureEl.querySelector('svg')) replace(figureEl, parseSvg(svg), h('figcaption'));
      if (svg === undefined) replace(figureEl, h('p', { class: 'muted' }, 'The state chart is not available from this server.'));
      render();
    } catch (failure) {
      error = `cannot reach the API: ${failure.message}`;
      render();
    }
  }

  function setConfig(body) {
    config = body;
    configKey = keyOf(view);
  }

  /** Fetches what was sent again when the view shows other versions than the configuration on display. */
  async function refreshConfig() {
    if (view.state !== 'serving' && view.state !== 'awaiting-snapshot') return;
    if (keyOf(view) === configKey) return;
    const sent = await getJson(`/sessions/${encodeURIComponent(node)}/xds`);
    if (sent.status === 200) setConfig(sent.body);
    renderConfig();
  }

  /** The node's effective policies, at the store's current revision. */
  async function loadPolicies() {
    const dot = node.indexOf('.');
    const { status, body } = await getJson(`/meshes/${encodeURIComponent(node.slice(0, dot))}/dataplanes/${encodeURIComponent(node.slice(dot + 1))}/policies`);
    policiesRevision = status === 200 ? body.revision : undefined;
    policies.show(status === 200 ? body : undefined);
  }

  /** The node's sessions on every live instance; renders what it changes. */
  async function loadFleet() {
    if (fleetLoading) return;
    fleetLoading = true;
    try {
      const { status, body } = await getJson(`/sessions/${encodeURIComponent(node)}/history?scope=fleet`);
      fleet = status === 200 ? body : undefined;
      fleetError = status === 200 || status === 404 ? undefined : body.reason;
    } catch (failure) {
      fleetError = `cannot reach the API for the fleet: ${failure.message}`;
    } finally {
      fleetLoading = false;
    }
    renderHead();
    renderFleet();
  }

  /** Sessions of the node on other instances (this instance's own has no `recordedAt`). */
  function elsewhere() {
    return fleet?.sessions.filter((session) => session.recordedAt !== undefined) ?? [];
  }

  function render() {
    renderHead();
    renderFleet();
    localEl.hidden = view === undefined;
    if (view === undefined) return;
    renderCounts();
    renderChart();
    renderTimeline();
    renderTypes();
    renderConfig();
  }

  function renderHead() {
    const facts = view && [
      ['Instance', view.instance],
      ['Stream', view.stream ? `${view.stream.id} from ${view.stream.peer}` : '–'],
      ['Protocol', view.stream ? (view.stream.protocol === 'delta' ? 'Delta' : 'State of the World') : '–'],
      ['Opened', view.stream ? timeElement(view.stream.openedAt) : '–'],
      ['Revision', view.revision ?? '–'],
      // Mesh mTLS (docs/mtls.md): the workload certificate the node was last issued.
      ...(view.certificate
        ? [
            ['Identity', view.certificate.spiffeIds.join(', ')],
            ['Certificate', `serial ${view.certificate.serial}, CA ${view.certificate.issuer}`],
            ['Valid until', timeElement(view.certificate.notAfter)],
            ['Renewed at', timeElement(view.certificate.renewAt)],
          ]
        : []),
      ...(view.inbound ? [['Inbound accepts', view.inbound.reason ? `${view.inbound.accepts}: ${view.inbound.reason}` : view.inbound.accepts]] : []),
    ];
    replace(
      headEl,
      h('h1', {}, node, ' ', view && stateBadge(view.state)),
      facts && h('dl', { class: 'facts' }, facts.map(([name, value]) => h('div', {}, h('dt', {}, name), h('dd', {}, value)))),
    );
    const others = elsewhere().map((session) => session.instance);
    const onOthers = others.length === 0 ? '' : ` It has a session on ${others.join(', ')}: see its story across the fleet.`;
    let notice;
    if (error !== undefined) notice = h('p', { class: 'notice error' }, error);
    else if (view?.error) notice = h('p', { class: 'notice error' }, h('strong', {}, view.error.code), ': ', view.error.message);
    else if (view?.certificateError) notice = h('p', { class: 'notice error' }, h('strong', {}, 'Certificate not renewed'), ': ', view.certificateError, ' (the node keeps the one it holds; tried again)');
    else if (view !== undefined && (view.state === 'evicted' || missing)) {
      notice = h('p', { class: 'notice' }, `This session was evicted: it no longer exists on this instance. What it showed last is kept below.${onOthers}`);
    } else if (missing && others.length > 0) {
      notice = h('p', { class: 'notice' }, `No session for ${node} on this instance: it is connected to ${others.join(', ')}. Its story is below, as last saved there; this page updates if it connects here.`);
    } else if (missing) {
      notice = h('p', { class: 'notice' }, `No session for ${node} on this instance, nor on any other live instance. It may have been evicted; this page updates when it connects.`);
    }
    replace(noticeEl, notice, fleetError !== undefined && h('p', { class: 'notice error' }, fleetError));
  }

  /** Shown when other instances have a session for the node: which, in what state, and the steps of all of them. */
  function renderFleet() {
    fleetEl.hidden = elsewhere().length === 0;
    if (fleetEl.hidden) return;
    replace(
      fleetSessionsEl,
      fleet.sessions.map((session) =>
        h(
          'li',
          { 'data-instance': session.instance, 'data-state': session.state },
          h('strong', { class: 'instance-name' }, session.instance),
          stateBadge(session.state),
          session.recordedAt === undefined
            ? h('span', { class: 'as-of' }, 'this instance, live')
            : h('span', { class: 'as-of', title: `last saved at ${session.recordedAt}` }, `saved ${ago(session.recordedAt)}`),
        ),
      ),
    );
    replace(
      fleetTimelineEl,
      fleet.transitions.length === 0 ? h('li', { class: 'muted' }, 'No transitions saved yet.') : [...fleet.transitions].reverse().map(stepItem),
    );
  }

  function renderCounts() {
    replace(
      countsEl,
      TYPES.map((type) =>
        h(
          'div',
          { class: 'tile' },
          h('span', { class: 'tile-n' }, view.types[type]?.sent ? count(view.types[type].sent.resources) : '–'),
          h('span', { class: 'tile-label' }, `${type} resources`),
        ),
      ),
    );
  }

  function renderChart() {
    const svg = figureEl.querySelector('svg');
    if (!svg || statechart === undefined) return;
    const current = view.step ?? view.state;
    const steps = view.transitions.filter((step) => step.from !== step.to);
    const taken = steps.map((step) => takenBy(statechart, step));
    const walked = new Set(taken.flat());
    const latest = new Set(taken.at(-1) ?? []);
    const visited = new Set(steps.flatMap((step) => [step.from, step.to]));
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', `State chart of the session; the current state is ${current}`);
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    for (const group of svg.querySelectorAll('g.node')) {
      const state = titleOf(group);
      group.classList.toggle('current', state === current);
      group.classList.toggle('visited', visited.has(state));
    }
    for (const group of svg.querySelectorAll('g.edge')) {
      const transition = Number(group.id.replace(/^t/, ''));
      group.classList.toggle('walked', walked.has(transition));
      group.classList.toggle('latest', latest.has(transition));
    }
    const path = steps.length === 0 ? [current] : [steps[0].from, ...steps.map((step) => step.to)];
    replace(
      figureEl.querySelector('figcaption'),
      h('span', { class: 'legend current' }, 'current state'),
      h('span', { class: 'legend walked' }, 'recent path'),
      h('span', { class: 'path' }, path.join(' → ')),
    );
  }

  function renderTimeline() {
    replace(timelineEl, view.transitions.length === 0 ? h('li', { class: 'muted' }, 'No transitions yet.') : [...view.transitions].reverse().map(stepItem));
  }

  function renderTypes() {
    const rows = TYPES.filter((type) => view.types[type]).map((type) => {
      const status = view.types[type];
      const { subscription, sent, acked, nacked } = status;
      return [
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, type),
          h('td', {}, outcomeBadge(status)),
          h('td', {}, subscription.wildcard ? h('em', {}, 'wildcard') : subscription.names.join(', ') || '–'),
          h('td', {}, versionCell(sent)),
          // Delta: a response carries only what changed; what the node holds is the count to read.
          h('td', { class: 'num', title: status.held ? 'resources the node holds' : 'resources in the last response' }, status.held ? count(Object.keys(status.held).length) : sent ? count(sent.resources) : '–'),
          h('td', {}, versionCell(acked)),
          h('td', {}, versionCell(nacked)),
        ),
        nacked &&
          h(
            'tr',
            { class: 'nack-row' },
            h('td', { colspan: 7 }, h('span', { class: 'muted' }, `Last NACK of ${type}:`), h('pre', { class: 'nack-message' }, nacked.message)),
          ),
      ];
    });
    replace(
      typesEl,
      rows.length === 0
        ? h('p', { class: 'muted' }, 'No type requested on the current stream.')
        : h(
            'table',
            { class: 'types' },
            h('thead', {}, h('tr', {}, ['Type', 'Last response', 'Subscribed', 'Sent', 'Resources', 'ACKed', 'NACKed'].map((name) => h('th', { scope: 'col' }, name)))),
            h('tbody', {}, rows),
          ),
    );
  }

  function renderConfig() {
    const types = TYPES.filter((type) => config?.[type]);
    replace(
      configEl,
      types.length === 0
        ? h('p', { class: 'muted' }, 'Nothing sent on the current stream.')
        : types.map((type) => {
            const { version, nonce, resources } = config[type];
            return h(
              'details',
              { open: resources.length <= 4 },
              h('summary', {}, h('strong', {}, type), ` · ${count(resources.length)} resource${resources.length === 1 ? '' : 's'} · version `, h('code', {}, version), ' · nonce ', h('code', {}, nonce)),
              h('pre', { class: 'json', tabindex: 0 }, JSON.stringify(resources, null, 2)),
            );
          }),
    );
  }

  const stopRefresh = refreshWhileVisible(FLEET_REFRESH_MS, loadFleet);
  const close = openFeed({
    node,
    onOpen: () => {
      setLive('on');
      load();
    },
    onDown: () => setLive('off'),
    onView: (next) => {
      view = next;
      missing = false;
      render();
      if (next.revision !== undefined && next.revision !== policiesRevision) loadPolicies().catch(() => policies.show(undefined));
      refreshConfig().catch((failure) => {
        error = `cannot reach the API: ${failure.message}`;
        renderHead();
      });
    },
    onResync: () => load(),
  });

  return {
    destroy() {
      close();
      stopRefresh();
    },
  };
}

/** Which versions and nonces a view says were sent; the configuration shown must match. */
function keyOf(view) {
  return view === undefined ? '' : TYPES.map((type) => `${view.types[type]?.sent?.version}/${view.types[type]?.sent?.nonce}`).join(' ');
}

/** One step of a timeline; a step of the story across the fleet names its instance. */
function stepItem(step) {
  return h(
    'li',
    { class: `step${step.event === 'xds.nacked' ? ' nack' : ''}`, 'data-instance': step.instance },
    timeElement(step.at),
    h(
      'div',
      { class: 'step-main' },
      step.instance && h('span', { class: 'instance-tag' }, step.instance),
      h('code', { class: 'event' }, step.event),
      h('span', { class: 'move' }, stateBadge(step.from), step.from === step.to ? '' : [' → ', stateBadge(step.to)]),
      // A snapshot generated (or not) from a store revision: the write that made it, and how it landed.
      step.detail?.revision !== undefined && h('a', { class: 'step-write', href: `#/changes/${step.detail.revision}` }, `revision ${step.detail.revision}`),
    ),
    step.detail && detailList(step.detail),
  );
}

function titleOf(group) {
  return group.querySelector(':scope > title')?.textContent ?? '';
}

function timeElement(iso) {
  return h('time', { datetime: iso, title: iso }, timeOf(iso));
}

/** A version and its nonce; the time is on hover, to keep the table narrow. */
function versionCell(entry) {
  if (!entry) return '–';
  return h('span', { class: 'version', title: `at ${entry.at}` }, h('code', {}, entry.version), h('span', { class: 'muted' }, ` nonce ${entry.nonce}`));
}

function detailList(detail) {
  return h(
    'dl',
    { class: 'detail' },
    Object.entries(detail).map(([name, value]) =>
      h(
        'div',
        { class: name === 'message' ? 'message' : undefined },
        h('dt', {}, name),
        h('dd', {}, name === 'message' ? h('pre', {}, value) : name === 'typeUrl' ? shortType(value) : value),
      ),
    ),
  );
}

/** `type.googleapis.com/envoy.config.listener.v3.Listener` reads as `Listener`; the full URL is on hover. */
function shortType(typeUrl) {
  return h('span', { title: typeUrl }, String(typeUrl).split('.').at(-1));
}
