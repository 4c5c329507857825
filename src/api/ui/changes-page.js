// Recent writes, newest first, each with its rollout across the fleet: how many of the nodes it
// changed have ACKed it, NACKed it, are pending or connected nowhere. `#/changes/<R>` is one
// write's rollout in full. Other instances' sessions come through no live feed: the rollouts
// are asked for again every few seconds while the page is visible.

import { getJson } from './api.js';
import { h, replace } from './dom.js';
import { refreshWhileVisible } from './refresh-while-visible.js';
import { ago, count, timeOf } from './session-status.js';

/** How often the rollouts are asked for again. */
const REFRESH_MS = 2000;

/** Writes listed: their rollouts are asked for on each refresh. */
const LISTED = 20;

export function changesPage({ main, setLive }, revision, since) {
  let writes;
  const rollouts = new Map();
  let error;

  const bodyEl = h('div', {});
  replace(
    main,
    revision === undefined ? undefined : h('nav', { class: 'breadcrumb', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/changes' }, '← Changes')),
    h('div', { class: 'page-head' }, h('h1', {}, revision === undefined ? 'Changes' : `Revision ${revision}`), h('p', { class: 'status muted' }, 'Writes and how they landed across the fleet')),
    bodyEl,
  );
  document.title = revision === undefined ? 'Changes · Chancery' : `Revision ${revision} · Chancery`;

  async function load() {
    try {
      if (revision === undefined) {
        const listed = await getJson(`/revisions?limit=${LISTED}`);
        if (listed.status !== 200) throw new Error(listed.body.reason);
        writes = listed.body.items;
      } else {
        writes = [{ revision, since: since ?? revision - 1 }];
      }
      await Promise.all(writes.map(async (write) => rollouts.set(write.revision, await rolloutOf(write))));
      error = undefined;
      setLive('on');
    } catch (failure) {
      error = `cannot reach the API: ${failure.message}`;
      setLive('off');
    }
    render();
  }

  function render() {
    if (error !== undefined) return replace(bodyEl, h('p', { class: 'notice error' }, error));
    if (revision !== undefined) return replace(bodyEl, detail(rollouts.get(revision)));
    replace(
      bodyEl,
      writes.length === 0
        ? h('p', { class: 'muted' }, 'No writes retained.')
        : h(
            'div',
            { class: 'table-wrap' },
            h(
              'table',
              { class: 'changes' },
              h('thead', {}, h('tr', {}, ['Revision', 'Time', 'Author', 'Resources', 'Rollout'].map((name) => h('th', { scope: 'col' }, name)))),
              h('tbody', {}, writes.map((write) => row(write, rollouts.get(write.revision)))),
            ),
          ),
    );
  }

  load();
  const stop = refreshWhileVisible(REFRESH_MS, load);
  return { destroy: stop, update() {} };
}

/** A write's rollout across the fleet; a revision compacted away, or any failure, reads as its error. */
async function rolloutOf({ revision, since }) {
  const { status, body } = await getJson(`/revisions/${revision}?scope=fleet&since=${since}`);
  return status === 200 ? body : { failed: body.reason };
}

function row(write, rollout) {
  const href = `#/changes/${write.revision}?since=${write.since}`;
  return h(
    'tr',
    { 'data-revision': write.revision },
    h('th', { scope: 'row' }, h('a', { href }, write.revision)),
    h('td', {}, h('time', { datetime: write.at, title: write.at }, timeOf(write.at)), h('span', { class: 'as-of' }, ago(write.at))),
    h('td', {}, author(write.by)),
    h('td', {}, resources(write)),
    h('td', { class: 'rollout-cell' }, summary(rollout)),
  );
}

function author(by) {
  return by.caller === undefined ? by.instance : [by.caller, h('span', { class: 'as-of' }, `via ${by.instance}`)];
}

function resources(write) {
  const named = write.resources.map(({ type, mesh, name, kind }) => h('li', {}, h('span', { class: 'muted' }, `${kind === 'deleted' ? 'deleted' : 'wrote'} ${type} `), type === 'Mesh' ? name : `${mesh}/${name}`));
  const more = write.events - write.resources.length;
  return h('ul', { class: 'write-resources' }, named, more > 0 && h('li', { class: 'muted' }, `and ${count(more)} more`));
}

/** ACKed / NACKed / pending / not connected of the nodes a write changed, and whether it is done. */
function summary(rollout) {
  if (rollout === undefined) return '…';
  if (rollout.failed !== undefined) return h('span', { class: 'muted' }, rollout.failed);
  const { affected, acked, nacked, pending, notConnected } = rollout.nodes;
  if (affected === 0) return h('span', { class: 'muted' }, rollout.deleted.length > 0 ? `${rollout.deleted.length} stream(s) ended` : 'no node changed');
  const state = nacked > 0 ? 'nacked' : rollout.complete ? 'complete' : 'pending';
  return h(
    'span',
    { class: `rollout rollout-${state}`, 'data-rollout': state },
    h('span', { class: 'outcome outcome-ack', title: 'ACKed' }, `${count(acked)} ACK`),
    ' ',
    nacked > 0 && [h('span', { class: 'outcome outcome-nack', title: 'NACKed' }, `${count(nacked)} NACK`), ' '],
    pending > 0 && [h('span', { class: 'outcome outcome-sent', title: 'pending' }, `${count(pending)} pending`), ' '],
    notConnected > 0 && h('span', { class: 'muted', title: 'connected nowhere: sent the revision when they connect' }, `${count(notConnected)} not connected`),
    h('span', { class: 'as-of' }, `of ${count(affected)} node${affected === 1 ? '' : 's'}${rollout.complete ? ' · complete' : ''}`),
  );
}

/** One write's rollout in full: its resources, its counts, the NACKs grouped, the nodes pending. */
function detail(rollout) {
  if (rollout === undefined) return h('p', { class: 'muted' }, 'Loading…');
  if (rollout.failed !== undefined) return h('p', { class: 'notice error' }, rollout.failed);
  const nodeLink = (node) => h('a', { href: `#/nodes/${encodeURIComponent(node)}` }, node);
  return [
    h('section', { class: 'panel' }, h('h2', {}, 'Write ', h('span', { class: 'muted' }, `revisions ${rollout.since + 1}–${rollout.revision}, ${rollout.write.at}`)), author(rollout.write.by), resources(rollout.write)),
    h('section', { class: 'panel' }, h('h2', {}, 'Rollout'), summary(rollout)),
    rollout.nacks.length > 0 &&
      h(
        'section',
        { class: 'panel' },
        h('h2', {}, 'NACKs'),
        rollout.nacks.map((nack) => h('div', { class: 'nack-group' }, h('pre', { class: 'nack-message' }, `${nack.type}: ${nack.message}`), h('p', {}, `${count(nack.count)} node(s): `, nack.nodes.map((node, i) => [i > 0 && ', ', nodeLink(node)])))),
      ),
    rollout.pending.length > 0 &&
      h('section', { class: 'panel' }, h('h2', {}, 'Pending'), h('ul', {}, rollout.pending.map(({ node, reason, instance }) => h('li', {}, nodeLink(node), h('span', { class: 'muted' }, ` ${reason} on ${instance}`))))),
    rollout.deleted.length > 0 && h('section', { class: 'panel' }, h('h2', {}, 'Deleted'), h('p', {}, rollout.deleted.join(', '))),
  ];
}
