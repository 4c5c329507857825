// The fleet: sessions counted by state and instance, filtered, one page of them in a table,
// kept current by the live feed. With the whole fleet in scope, other instances' sessions
// show as they last saved them, asked for again every few seconds.

import { getJson, openFeed, thisInstance } from './api.js';
import { h, replace } from './dom.js';
import { outcomeBadge, stateBadge } from './badges.js';
import { refreshWhileVisible } from './refresh-while-visible.js';
import { ago, count, TYPES } from './session-status.js';

/** Rows per page: the browser never holds more than this many sessions. */
const PAGE_SIZE = 100;

/** How often the whole-fleet view asks again: instances save their records every second by default. */
const FLEET_REFRESH_MS = 2000;

const SCOPES = [
  ['local', 'This instance'],
  ['fleet', 'Whole fleet'],
];

/** The filters a fleet URL carries: `#/?scope=fleet&mesh=default&state=serving&instance=…&nacking=true&page=2`. */
function filtersOf(params) {
  const page = Number.parseInt(params.get('page') ?? '1', 10);
  return {
    scope: params.get('scope') === 'fleet' ? 'fleet' : 'local',
    mesh: params.get('mesh') ?? '',
    state: params.get('state') ?? '',
    instance: params.get('instance') ?? '',
    nacking: params.get('nacking') === 'true',
    page: Number.isFinite(page) && page > 0 ? page : 1,
  };
}

/** The filters as query parameters, the same in the page's URL and in `GET /sessions`. */
function filterParams(filters) {
  const params = new URLSearchParams();
  if (filters.scope === 'fleet') params.set('scope', 'fleet');
  if (filters.mesh) params.set('mesh', filters.mesh);
  if (filters.state) params.set('state', filters.state);
  if (filters.instance) params.set('instance', filters.instance);
  if (filters.nacking) params.set('nacking', 'true');
  return params;
}

/** The fleet URL for `filters`. */
function hrefOf(filters) {
  const params = filterParams(filters);
  if (filters.page > 1) params.set('page', String(filters.page));
  const query = params.toString();
  return query ? `#/?${query}` : '#/';
}

function sessionsQuery(filters) {
  const params = filterParams(filters);
  params.set('limit', String(PAGE_SIZE));
  params.set('offset', String((filters.page - 1) * PAGE_SIZE));
  return `/sessions?${params}`;
}

export function fleetPage({ main, setLive }) {
  let filters;
  let page = { items: [], total: 0, counts: { byState: {}, byInstance: {} }, refused: { total: 0, recent: [] } };
  let error;
  /** Views from the feed, numbered: a fetch started before one arrived must not undo it. */
  const recent = new Map();
  /**
   * Rows whose session the feed reported evicted. The registry has forgotten them, so only
   * the feed can tell; they stay, marked, until the filters or the page change.
   */
  const evicted = new Map();
  /** Nodes of the feed's latest batch: their rows flash once. */
  let changed = new Set();
  let received = 0;
  let loading = false;
  let reloadOwed = false;
  const meshes = new Set();
  const instances = new Set();
  /** `GET /instances` while the whole fleet is in scope: id, sessions, seenAt of each. */
  let fleetInstances = [];
  let self;
  let stopRefresh;

  const countsEl = h('section', { class: 'counts', 'aria-label': 'Sessions by state' });
  const instancesEl = h('section', { class: 'instances', 'aria-label': 'Sessions by instance' });
  const refusedEl = h('section', { class: 'refused', 'aria-label': 'Refused streams' });
  const meshSelect = h('select', { id: 'filter-mesh', name: 'mesh' });
  const stateSelect = h('select', { id: 'filter-state', name: 'state' });
  const instanceSelect = h('select', { id: 'filter-instance', name: 'instance' });
  const nackingBox = h('input', { id: 'filter-nacking', name: 'nacking', type: 'checkbox' });
  const scopeRadios = SCOPES.map(([value]) => h('input', { id: `scope-${value}`, name: 'scope', type: 'radio', value, class: 'visually-hidden' }));
  const scopeEl = h(
    'fieldset',
    { class: 'scope' },
    h('legend', { class: 'visually-hidden' }, 'Sessions of'),
    SCOPES.map(([value, label], index) => [scopeRadios[index], h('label', { for: `scope-${value}` }, label)]),
  );
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter sessions', onsubmit: (event) => event.preventDefault() },
    h('label', { for: 'filter-mesh' }, 'Mesh'),
    meshSelect,
    h('label', { for: 'filter-state' }, 'State'),
    stateSelect,
    h('label', { for: 'filter-instance' }, 'Instance'),
    instanceSelect,
    h('span', { class: 'check' }, nackingBox, h('label', { for: 'filter-nacking' }, 'NACKing only')),
    h('a', { class: 'button', href: '#/' }, 'Clear filters'),
  );
  const navigate = (event) => {
    const scope = scopeRadios.find((radio) => radio.checked)?.value ?? 'local';
    location.hash = hrefOf({
      scope,
      mesh: meshSelect.value,
      state: stateSelect.value,
      // This instance alone has no other instance to filter by.
      instance: event.target.name === 'scope' && scope === 'local' ? '' : instanceSelect.value,
      nacking: nackingBox.checked,
      page: 1,
    });
  };
  form.addEventListener('change', navigate);
  scopeEl.addEventListener('change', navigate);
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'sessions' },
    h('caption', { class: 'visually-hidden' }, 'Sessions, sorted by node then instance'),
    h(
      'thead',
      {},
      h('tr', {}, ['Node', 'State', 'Instance', 'Revision', ...TYPES, 'Error'].map((name) => h('th', { scope: 'col' }, name))),
    ),
    tbody,
  );
  const pagerEl = h('nav', { class: 'pager', 'aria-label': 'Pages of sessions' });
  const statusEl = h('p', { class: 'status', role: 'status' });
  replace(
    main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Fleet'), scopeEl, statusEl),
    h('div', { class: 'overview' }, countsEl, instancesEl),
    refusedEl,
    form,
    h('div', { class: 'table-wrap' }, table),
    pagerEl,
  );

  async function load() {
    if (loading) {
      reloadOwed = true;
      return;
    }
    loading = true;
    const startedAt = received;
    const fleet = filters.scope === 'fleet';
    try {
      const [{ status, body }, listed] = await Promise.all([
        getJson(sessionsQuery(filters)),
        fleet ? getJson('/instances') : undefined,
        self === undefined ? thisInstance().then((id) => (self = id)) : undefined,
      ]);
      error = status === 200 ? undefined : body.reason;
      if (status === 200) page = body;
      fleetInstances = listed?.status === 200 ? listed.body.items : [];
      render(startedAt);
    } catch (failure) {
      error = `cannot reach the API: ${failure.message}`;
      render(startedAt);
    } finally {
      loading = false;
      if (reloadOwed) {
        reloadOwed = false;
        load();
      }
    }
  }

  /** The page's rows: the fetched ones, updated by feed views newer than the fetch, and the evicted kept. */
  function rowsOf(startedAt) {
    const rows = new Map(page.items.map((view) => [rowKey(view), view]));
    for (const [key, { view, at }] of recent) {
      if (at <= startedAt) recent.delete(key);
      else if (rows.has(key)) rows.set(key, view);
    }
    for (const [key, { view, at }] of evicted) {
      if (at > startedAt || !rows.has(key)) rows.set(key, view);
      else evicted.delete(key);
    }
    return [...rows.values()].sort((a, b) => compare(a.node, b.node) || compare(a.instance, b.instance));
  }

  function render(startedAt = received) {
    for (const instance of Object.keys(page.counts.byInstance)) instances.add(instance);
    for (const { id } of fleetInstances) instances.add(id);
    renderFilters();
    renderCounts();
    renderRefused();
    const fleet = filters.scope === 'fleet';
    keepingRowFocus(tbody, () => replace(tbody, rowsOf(startedAt).map((view) => rowOf(view, { changed: changed.has(rowKey(view)), fleet }))));
    // A batch flashes once: the periodic refresh redraws its rows without it.
    changed = new Set();
    if (tbody.childElementCount === 0) {
      tbody.append(h('tr', {}, h('td', { class: 'empty', colspan: 5 + TYPES.length }, 'No sessions match these filters.')));
    }
    renderPager();
    statusEl.textContent = error ?? `${count(page.total)} session${page.total === 1 ? '' : 's'}${filtersText()}`;
    statusEl.classList.toggle('error', error !== undefined);
  }

  function filtersText() {
    const parts = [];
    if (filters.state) parts.push(`in ${filters.state}`);
    if (filters.mesh) parts.push(`in mesh ${filters.mesh}`);
    if (filters.instance) parts.push(`on ${filters.instance}`);
    else if (filters.scope === 'fleet') parts.push('across the fleet');
    if (filters.nacking) parts.push('NACKing');
    return parts.length === 0 ? '' : ` ${parts.join(', ')}`;
  }

  function renderFilters() {
    // Options are rebuilt only when they change, and relabelled in place: a live update must
    // not close an open select.
    const options = (select, values, all, current, label = (value) => value) => {
      const known = [...new Set([...values, ...(current ? [current] : [])])].sort();
      const key = known.join('\n');
      if (select.dataset.options !== key) {
        select.dataset.options = key;
        replace(select, h('option', { value: '' }, all), known.map((value) => h('option', { value })));
      }
      for (const option of select.options) {
        const text = option.value === '' ? all : label(option.value);
        if (option.textContent !== text) option.textContent = text;
      }
      select.value = current;
    };
    options(meshSelect, meshes, 'All meshes', filters.mesh);
    options(instanceSelect, instances, 'All instances', filters.instance, instanceLabel);
    for (const radio of scopeRadios) radio.checked = radio.value === filters.scope;
    // The API counts every state of the chart, in its order: the states are listed from there.
    if (stateSelect.options.length <= 1) {
      replace(stateSelect, h('option', { value: '' }, 'All states'), Object.keys(page.counts.byState).map((state) => h('option', { value: state }, state)));
    }
    stateSelect.value = filters.state;
    nackingBox.checked = filters.nacking;
  }

  /** `cp-b · 3 sessions · seen 1 s ago` with the whole fleet in scope, else the id. */
  function instanceLabel(id) {
    const listed = fleetInstances.find((instance) => instance.id === id);
    if (listed === undefined) return id === self ? `${id} (this instance)` : id;
    const sessions = `${count(listed.sessions)} session${listed.sessions === 1 ? '' : 's'}`;
    return id === self ? `${id} (this instance) · ${sessions}` : `${id} · ${sessions} · seen ${ago(listed.seenAt)}`;
  }

  function renderCounts() {
    const { byState, byInstance } = page.counts;
    replace(
      countsEl,
      h('h2', { class: 'visually-hidden' }, 'Sessions by state'),
      h(
        'ul',
        {},
        Object.keys(byState).map((state) => {
          const selected = filters.state === state;
          const href = hrefOf({ ...filters, state: selected ? '' : state, page: 1 });
          return h(
            'li',
            {},
            h(
              'a',
              {
                class: `count state-${state}`,
                href,
                'aria-current': selected ? 'true' : undefined,
                'data-state': state,
                'data-zero': !byState[state],
              },
              h('span', { class: 'count-n' }, count(byState[state] ?? 0)),
              h('span', { class: 'count-label' }, state),
            ),
          );
        }),
      ),
    );
    // The whole fleet lists every live instance, those with no matching session too.
    const ids = [...new Set([...Object.keys(byInstance), ...fleetInstances.map((instance) => instance.id)])].sort();
    replace(
      instancesEl,
      h('h2', {}, 'Instances'),
      ids.length === 0
        ? h('p', { class: 'muted' }, 'none')
        : h(
            'ul',
            {},
            ids.map((instance) => {
              const selected = filters.instance === instance;
              const seenAt = fleetInstances.find((listed) => listed.id === instance)?.seenAt;
              return h(
                'li',
                { 'data-instance': instance },
                h('a', { href: hrefOf({ ...filters, instance: selected ? '' : instance, page: 1 }), 'aria-current': selected ? 'true' : undefined }, instance),
                h('span', { class: 'muted' }, ` ${count(byInstance[instance] ?? 0)}`),
                instance === self
                  ? h('span', { class: 'instance-note' }, 'this instance')
                  : seenAt && h('span', { class: 'instance-note', title: `last saved its sessions at ${seenAt}` }, `seen ${ago(seenAt)}`),
              );
            }),
          ),
    );
  }

  /** Streams this instance refused for who they claimed to be: they never became sessions, so they are listed apart. */
  function renderRefused() {
    const { total, recent } = page.refused ?? { total: 0, recent: [] };
    refusedEl.dataset.total = String(total);
    replace(
      refusedEl,
      h('h2', {}, 'Refused streams ', h('span', { class: 'count-n', 'data-refused-total': String(total) }, count(total))),
      recent.length === 0
        ? h('p', { class: 'muted' }, 'none: every stream that claimed a node proved it')
        : h(
            'ul',
            {},
            recent.map((refused) =>
              h(
                'li',
                { 'data-node': refused.node, 'data-reason': refused.reason },
                h('code', {}, refused.node),
                ` ${refused.code} · ${refused.reason} · ${refused.peer} · `,
                h('span', { class: 'muted', title: refused.at }, ago(refused.at)),
                h('div', { class: 'refusal-message' }, refused.message),
              ),
            ),
          ),
    );
  }

  function renderPager() {
    const pages = Math.max(1, Math.ceil(page.total / PAGE_SIZE));
    const first = page.total === 0 ? 0 : (filters.page - 1) * PAGE_SIZE + 1;
    const last = Math.min(page.total, filters.page * PAGE_SIZE);
    const link = (label, target, rel) =>
      target >= 1 && target <= pages && target !== filters.page
        ? h('a', { class: 'button', href: hrefOf({ ...filters, page: target }), rel }, label)
        : h('span', { class: 'button', 'aria-disabled': 'true' }, label);
    replace(
      pagerEl,
      link('← Previous', filters.page - 1, 'prev'),
      h('span', {}, `${count(first)}–${count(last)} of ${count(page.total)} · page ${count(filters.page)} of ${count(pages)}`),
      link('Next →', filters.page + 1, 'next'),
    );
  }

  function onViews(views) {
    changed = new Set(views.map(rowKey));
    const fleet = filters.scope === 'fleet';
    for (const view of views) {
      const key = rowKey(view);
      const update = { view, at: ++received };
      recent.set(key, update);
      const row = tbody.querySelector(`tr[data-node="${CSS.escape(view.node)}"][data-instance="${CSS.escape(view.instance)}"]`);
      if (view.state !== 'evicted') evicted.delete(key);
      else if (row) evicted.set(key, update);
      if (row) keepingRowFocus(tbody, () => row.replaceWith(rowOf(view, { changed: true, fleet })));
    }
    // Counts and membership of the page change with states: refetch the page (one request at a time).
    load();
  }

  const close = openFeed({
    onOpen: () => {
      setLive('on');
      load();
    },
    onDown: () => setLive('off'),
    onViews,
    onResync: () => load(),
  });
  // The mesh list only fills the select: without it, the mesh in the URL is still offered.
  getJson('/meshes').then(
    ({ status, body }) => {
      if (status !== 200) return;
      for (const mesh of body.items) meshes.add(mesh.name);
      renderFilters();
    },
    () => {},
  );

  return {
    update(params) {
      filters = filtersOf(params);
      recent.clear();
      evicted.clear();
      changed = new Set();
      document.title = filters.scope === 'fleet' ? 'Whole fleet · Chancery' : 'Fleet · Chancery';
      // The live feed carries this instance's sessions only: the others' are asked for again.
      if (filters.scope !== 'fleet') {
        stopRefresh?.();
        stopRefresh = undefined;
      } else stopRefresh ??= refreshWhileVisible(FLEET_REFRESH_MS, load);
      renderFilters();
      load();
    },
    destroy() {
      close();
      stopRefresh?.();
    },
  };
}

/** A row is a session: a node on one instance (with the whole fleet, a node may be on two). */
function rowKey(view) {
  return `${view.instance}\n${view.node}`;
}

/**
 * Redraws rows and gives the focus back to the link of the row that had it: the whole fleet is
 * redrawn every few seconds, and a keyboard user must not lose their place.
 */
function keepingRowFocus(tbody, redraw) {
  const row = tbody.contains(document.activeElement) ? document.activeElement.closest('tr') : null;
  redraw();
  if (row === null || row.isConnected) return;
  const selector = `tr[data-node="${CSS.escape(row.dataset.node)}"][data-instance="${CSS.escape(row.dataset.instance)}"] a`;
  tbody.querySelector(selector)?.focus({ preventScroll: true });
}

function compare(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** With the whole fleet, sessions of other instances say they are as last saved, and when. */
function rowOf(view, { changed, fleet }) {
  const classes = [view.state === 'evicted' && 'evicted', changed && 'changed'].filter(Boolean);
  return h(
    'tr',
    { 'data-node': view.node, 'data-instance': view.instance, 'data-state': view.state, class: classes.length > 0 ? classes.join(' ') : undefined },
    h('th', { scope: 'row' }, h('a', { href: `#/nodes/${encodeURIComponent(view.node)}` }, view.node)),
    h('td', {}, stateBadge(view.state)),
    h(
      'td',
      { class: 'instance-cell' },
      view.instance,
      fleet &&
        (view.recordedAt
          ? h('span', { class: 'as-of', title: `as ${view.instance} last saved it, at ${view.recordedAt}` }, `saved ${ago(view.recordedAt)}`)
          : h('span', { class: 'as-of', title: 'this instance’s session, live' }, 'live')),
    ),
    h('td', { class: 'num' }, view.revision ?? '–'),
    TYPES.map((type) => h('td', { class: 'type' }, outcomeBadge(view.types[type]))),
    h('td', {}, view.error ? h('span', { class: 'error-code', title: view.error.message }, view.error.code) : ''),
  );
}

