// The small labelled marks both pages use for states and per-type outcomes.

import { h } from './dom.js';
import { outcomeOf } from './session-status.js';

export function stateBadge(state) {
  return h('span', { class: `badge state-${state}` }, state);
}

/** ACK, NACK, sent or – for a type, with its version and nonce on hover. */
export function outcomeBadge(status) {
  const outcome = outcomeOf(status);
  const sent = status?.sent;
  return h(
    'span',
    { class: `outcome outcome-${outcome === '-' ? 'none' : outcome.toLowerCase()}`, title: sent && `version ${sent.version}, nonce ${sent.nonce}` },
    outcome === '-' ? '–' : outcome,
  );
}
