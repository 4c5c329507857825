// The UI's router: `#/` (with filters) is the fleet, `#/nodes/<node>` a node's page,
// `#/changes` the recent writes and `#/changes/<revision>` one write's rollout.

import { thisInstance } from './api.js';
import { changesPage } from './changes-page.js';
import { h, replace } from './dom.js';
import { fleetPage } from './fleet-page.js';
import { nodePage } from './node-page.js';

const main = document.getElementById('main');
const live = document.getElementById('live');
const instance = document.getElementById('instance');

const LIVE_TEXT = { on: 'Live', off: 'Reconnecting…', connecting: 'Connecting…' };

/** Shows whether the page's live feed is connected: `on`, `off` or `connecting`. */
function setLive(state) {
  live.dataset.live = state;
  live.textContent = LIVE_TEXT[state];
  if (state === 'on' && instance.hidden) showInstance();
}

/** Names the instance serving the page in the header, once it can be told (see `thisInstance`). */
function showInstance() {
  thisInstance().then(
    (id) => {
      if (id === undefined) return;
      replace(instance, h('span', { class: 'muted' }, 'instance '), h('code', {}, id));
      instance.title = 'The instance serving this page: its live feed updates the pages';
      instance.hidden = false;
    },
    () => {},
  );
}

let current;

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?');
  const nodeMatch = /^\/nodes\/(.+)$/.exec(path);
  const node = nodeMatch ? decodeURIComponent(nodeMatch[1]) : undefined;
  const changesMatch = /^\/changes(?:\/(\d+))?$/.exec(path);
  // The fleet page stays while only its filters change, so a form control keeps its focus.
  const key = changesMatch ? `changes ${path}?${query}` : node === undefined ? 'fleet' : `node ${node}`;
  if (current === undefined || current.key !== key) {
    current?.page.destroy();
    setLive('connecting');
    current = { key, page: pageFor(node, changesMatch, new URLSearchParams(query)) };
    main.focus({ preventScroll: true });
  }
  if (node === undefined && !changesMatch) current.page.update(new URLSearchParams(query));
}

function pageFor(node, changesMatch, params) {
  if (changesMatch) {
    const since = params.get('since');
    return changesPage({ main, setLive }, changesMatch[1] === undefined ? undefined : Number(changesMatch[1]), since === null ? undefined : Number(since));
  }
  return node === undefined ? fleetPage({ main, setLive }) : nodePage({ main, setLive }, node);
}

window.addEventListener('hashchange', route);
route();
