import type { Tags, TargetRef, ToTargetKind, TopTargetKind } from './policy-resources.js';

/** What policy matching reads of a dataplane: the tags of its inbounds (a Dataplane's `networking` is one). */
export interface Selectable {
  readonly inbound: readonly { readonly tags: Tags }[];
}

/**
 * Whether a top-level `targetRef` selects a dataplane (Kuma's matching): `Mesh` every one,
 * `MeshSubset` one with an inbound carrying all of its tags, `MeshService` one with an inbound
 * serving the service. A dataplane that serves nothing (a pure client) is selected by `Mesh` only.
 */
export function selects(targetRef: TargetRef<TopTargetKind>, dataplane: Selectable): boolean {
  switch (targetRef.kind) {
    case 'Mesh':
      return true;
    case 'MeshService':
      return dataplane.inbound.some(({ tags }) => tags['service'] === targetRef.name);
    case 'MeshSubset':
      return dataplane.inbound.some(({ tags }) => hasTags(tags, targetRef.tags));
  }
}

/** The tags of a dataplane's inbounds `selects` reads for a top-level `targetRef`. */
export function tagsRead(targetRef: TargetRef<TopTargetKind>): readonly string[] {
  switch (targetRef.kind) {
    case 'Mesh':
      return [];
    case 'MeshService':
      return ['service'];
    case 'MeshSubset':
      return Object.keys(targetRef.tags);
  }
}

/** Whether a `to[].targetRef` selects the calls to `service`. */
export function appliesTo(targetRef: TargetRef<ToTargetKind>, service: string): boolean {
  return targetRef.kind === 'Mesh' || targetRef.name === service;
}

/** Whether `tags` include every one of `wanted`. */
export function hasTags(tags: Tags, wanted: Tags): boolean {
  for (const key in wanted) if (tags[key] !== wanted[key]) return false;
  return true;
}
