// The fleet: sessions counted by state and instance, filtered, one page of them in a table,
// kept current by the live feed.

import { getJson, openFeed } from './api.js';
import { h, replace } from './dom.js';
import { outcomeBadge, stateBadge } from './badges.js';
import { count, STATES, TYPES } from './session-status.js';

/** Rows per page: the browser never holds more than this many sessions. */
const PAGE_SIZE = 100;

/** The filters a fleet URL carries: `#/?mesh=default&state=serving&instance=…&nacking=true&page=2`. */
function filtersOf(params) {
  const page = Number.parseInt(params.get('page') ?? '1', 10);
  return {
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
  let page = { items: [], total: 0, counts: { byState: {}, byInstance: {} } };
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

  const countsEl = h('section', { class: 'counts', 'aria-label': 'Sessions by state' });
  const instancesEl = h('section', { class: 'instances', 'aria-label': 'Sessions by instance' });
  const meshSelect = h('select', { id: 'filter-mesh', name: 'mesh' });
  const stateSelect = h('select', { id: 'filter-state', name: 'state' });
  const instanceSelect = h('select', { id: 'filter-instance', name: 'instance' });
  const nackingBox = h('input', { id: 'filter-nacking', name: 'nacking', type: 'checkbox' });
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
  form.addEventListener('change', () => {
    location.hash = hrefOf({
      mesh: meshSelect.value,
      state: stateSelect.value,
      instance: instanceSelect.value,
      nacking: nackingBox.checked,
      page: 1,
    });
  });
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'sessions' },
    h('caption', { class: 'visually-hidden' }, 'Sessions of the fleet, sorted by node'),
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
    h('div', { class: 'page-head' }, h('h1', {}, 'Fleet'), statusEl),
    h('div', { class: 'overview' }, countsEl, instancesEl),
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
    try {
      const { status, body } = await getJson(sessionsQuery(filters));
      error = status === 200 ? undefined : body.reason;
      if (status === 200) page = body;
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
    const rows = new Map(page.items.map((view) => [view.node, view]));
    for (const [node, { view, at }] of recent) {
      if (at <= startedAt) recent.delete(node);
      else if (rows.has(node)) rows.set(node, view);
    }
    for (const [node, { view, at }] of evicted) {
      if (at > startedAt || !rows.has(node)) rows.set(node, view);
      else evicted.delete(node);
    }
    return [...rows.values()].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  function render(startedAt = received) {
    for (const instance of Object.keys(page.counts.byInstance)) instances.add(instance);
    renderFilters();
    renderCounts();
    replace(tbody, rowsOf(startedAt).map((view) => rowOf(view, changed.has(view.node))));
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
    if (filters.nacking) parts.push('NACKing');
    return parts.length === 0 ? '' : ` ${parts.join(', ')}`;
  }

  function renderFilters() {
    // Options are rebuilt only when they change: a live update must not close an open select.
    const options = (select, values, all, current) => {
      const known = [...new Set([...values, ...(current ? [current] : [])])].sort();
      const key = known.join('\n');
      if (select.dataset.options !== key) {
        select.dataset.options = key;
        replace(select, h('option', { value: '' }, all), known.map((value) => h('option', { value }, value)));
      }
      select.value = current;
    };
    options(meshSelect, meshes, 'All meshes', filters.mesh);
    options(instanceSelect, instances, 'All instances', filters.instance);
    if (stateSelect.options.length === 0) {
      replace(stateSelect, h('option', { value: '' }, 'All states'), STATES.map((state) => h('option', { value: state }, state)));
    }
    stateSelect.value = filters.state;
    nackingBox.checked = filters.nacking;
  }

  function renderCounts() {
    const { byState, byInstance } = page.counts;
    replace(
      countsEl,
      h('h2', { class: 'visually-hidden' }, 'Sessions by state'),
      h(
        'ul',
        {},
        STATES.map((state) => {
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
    const entries = Object.entries(byInstance).sort(([a], [b]) => (a < b ? -1 : 1));
    replace(
      instancesEl,
      h('h2', {}, 'Instances'),
      entries.length === 0
        ? h('p', { class: 'muted' }, 'none')
        : h(
            'ul',
            {},
            entries.map(([instance, n]) =>
              h(
                'li',
                {},
                h('a', { href: hrefOf({ ...filters, instance, page: 1 }) }, instance),
                h('span', { class: 'muted' }, ` ${count(n)}`),
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
    changed = new Set(views.map((view) => view.node));
    for (const view of views) {
      const update = { view, at: ++received };
      recent.set(view.node, update);
      const row = tbody.querySelector(`tr[data-node="${CSS.escape(view.node)}"]`);
      if (view.state !== 'evicted') evicted.delete(view.node);
      else if (row) evicted.set(view.node, update);
      row?.replaceWith(rowOf(view, true));
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
      document.title = 'Fleet · Chancery';
      renderFilters();
      load();
    },
    destroy: close,
  };
}

function rowOf(view, changed) {
  const classes = [view.state === 'evicted' && 'evicted', changed && 'changed'].filter(Boolean);
  return h(
    'tr',
    { 'data-node': view.node, 'data-state': view.state, class: classes.length > 0 ? classes.join(' ') : undefined },
    h('th', { scope: 'row' }, h('a', { href: `#/nodes/${encodeURIComponent(view.node)}` }, view.node)),
    h('td', {}, stateBadge(view.state)),
    h('td', {}, view.instance),
    h('td', { class: 'num' }, view.revision ?? '–'),
    TYPES.map((type) => h('td', { class: 'type' }, outcomeBadge(view.types[type]))),
    h('td', {}, view.error ? h('span', { class: 'error-code', title: view.error.message }, view.error.code) : ''),
  );
}

