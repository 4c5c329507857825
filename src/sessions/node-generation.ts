import type { Generate } from '../machines/index.js';
import { generate, type GenerationInput, type NodeCertificate } from '../mesh/index.js';

export interface NodeGenerationOptions {
  /** The store's current projection: what each generation reads. */
  readonly projection: () => GenerationInput;
  /** The node's workload certificate, in a mesh with mTLS (docs/mtls.md); the generator takes it as an input. */
  readonly certificate: (node: string) => NodeCertificate | undefined;
  /** How long one generation took, in seconds (the metrics' histogram). */
  readonly onGenerated?: (seconds: number) => void;
}

/**
 * How the sessions generate: a node's configuration from the store's current projection, timed,
 * with the generator's typed error reduced to what a session records and shows (its code and
 * message) at the revision it failed at. It only reads, so a session may call it within a step.
 */
export function nodeGeneration({ projection, certificate, onGenerated }: NodeGenerationOptions): Generate {
  return (node) => {
    const started = performance.now();
    const input = projection();
    const result = generate(node, input, certificate(node));
    onGenerated?.((performance.now() - started) / 1000);
    return result.ok ? result : { ok: false, revision: input.revision, error: { code: result.error.code, message: result.error.message } };
  };
}
