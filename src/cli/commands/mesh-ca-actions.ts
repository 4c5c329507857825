import { isDnsLabel } from '../../mesh/index.js';
import type { ApiClient } from '../api-client.js';
import type { CliIo } from '../cli-io.js';
import { atMost } from '../command.js';
import { UsageError } from '../errors.js';
import { formatTable } from '../format-table.js';
import { EXIT } from '../report-error.js';

/** What `chancery ca` does to a mesh's CAs through the API of a running instance. */
export const MESH_CA_ACTIONS = ['rotate', 'list', 'remove'] as const;
export type MeshCaAction = (typeof MESH_CA_ACTIONS)[number];

export function isMeshCaAction(action: string | undefined): action is MeshCaAction {
  return (MESH_CA_ACTIONS as readonly (string | undefined)[]).includes(action);
}

interface ShownAuthority {
  readonly id: string;
  readonly createdAt: string;
  readonly notAfter: string;
  readonly signing: boolean;
  readonly certificates: number;
  readonly awaiting: readonly string[];
}

export const MESH_CA_HELP = `  rotate   (--mesh MESH) add a CA to the mesh: every dataplane trusts it at once, and it signs
           once every dataplane has taken the new trust bundle; certificates move to it as they renew
  list     (--mesh MESH) the mesh's CAs, oldest first: which signs, how many certificates of
           connected dataplanes each signed, who does not trust it yet; -o json adds the trust bundle
  remove   (--mesh MESH ID) retire CA ID: refused while it signs, or while a connected dataplane
           holds a certificate it signed`;

/** Runs `chancery ca rotate|list|remove --mesh MESH`. */
export async function runMeshCaAction(
  action: MeshCaAction,
  positionals: readonly string[],
  options: { readonly mesh: string | undefined; readonly output: string | undefined; readonly client: () => ApiClient },
  io: CliIo,
): Promise<number> {
  const { mesh, output } = options;
  if (mesh === undefined || !isDnsLabel(mesh)) throw new UsageError(`--mesh MESH is required for ca ${action}, a DNS label`);
  if (output !== undefined && (action !== 'list' || output !== 'json')) throw new UsageError('-o json applies to ca list');
  const path = `/meshes/${encodeURIComponent(mesh)}/ca`;
  const client = options.client();
  switch (action) {
    case 'rotate': {
      atMost(positionals, 1);
      const added = (await client.request('POST', path, {})).body as ShownAuthority;
      const waiting = added.signing ? 'it signs now' : `it signs once ${added.awaiting.length} dataplane(s) trust it`;
      io.stdout.write(`CA ${added.id} added to mesh ${mesh}: every dataplane trusts it, and ${waiting}\n`);
      return EXIT.ok;
    }
    case 'list': {
      atMost(positionals, 1);
      const { body } = await client.request('GET', path);
      if (output === 'json') {
        io.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
        return EXIT.ok;
      }
      const rows = (body as { items: ShownAuthority[] }).items.map((ca) => [
        ca.id,
        ca.createdAt,
        ca.notAfter,
        ca.signing ? 'yes' : '',
        String(ca.certificates),
        ca.awaiting.length === 0 ? '' : ca.awaiting.slice(0, 3).join(',') + (ca.awaiting.length > 3 ? ',…' : ''),
      ]);
      io.stdout.write(formatTable(['ID', 'CREATED', 'NOT AFTER', 'SIGNS', 'CERTIFICATES', 'NOT TRUSTED BY'], rows));
      return EXIT.ok;
    }
    case 'remove': {
      atMost(positionals, 2);
      const id = positionals[1];
      if (id === undefined) throw new UsageError('say which CA: chancery ca remove --mesh MESH ID');
      await client.request('DELETE', `${path}/${encodeURIComponent(id)}`);
      io.stdout.write(`CA ${id} removed from mesh ${mesh}: no dataplane trusts it any more\n`);
      return EXIT.ok;
    }
  }
}
