import { atMost, type Command, parseCommandLine } from '../command.js';
import { controlPlaneOptionsOf, describeOptions, flagsOf, resolveOptions, RUN_OPTIONS } from '../config.js';
import { ChanceryError } from '../../common/index.js';
import { StartFailedError } from '../errors.js';
import { EXIT } from '../report-error.js';
import { runLogger } from '../run-logger.js';
import { answerMetrics, metricsOfAllWorkers, primaryAsksToStop, reportStarted, superviseWorkers, workerIndex } from '../worker-cluster.js';
import type { ControlPlaneOptions } from '../../control-plane-options.js';

const OPTIONS = flagsOf(RUN_OPTIONS);

export const runCommand: Command = {
  name: 'run',
  summary: 'run a control plane (what npm start does)',
  help: `Usage: chancery run [options]

Serves xDS to dataplanes and the HTTP API until SIGINT or SIGTERM, then drains: new
streams are refused, open ones end with UNAVAILABLE spread over --drain-period so
dataplanes reconnect to other instances gradually, and it exits; a second signal meanwhile is
ignored (Ctrl-C under npm start arrives twice). Logs go to stdout: lines for a person on a
terminal, JSON lines otherwise (--log-format). Each option can also be set by its environment
variable; a flag wins over the variable.

Options:
${describeOptions(RUN_OPTIONS).join('\n')}
`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine(argv, OPTIONS);
    atMost(positionals, 0);
    const config = resolveOptions(RUN_OPTIONS, values, io.env);
    const logger = await runLogger(config.logLevel, config.logFormat, io.stdout);
    const options = controlPlaneOptionsOf(config, logger);
    const worker = workerIndex();
    if (config.workers > 1 && worker === undefined) {
      const clean = await superviseWorkers({ count: config.workers, logger, stopRequested: io.stopRequested });
      return clean ? EXIT.ok : EXIT.failed;
    }
    // A worker stops when the primary asks, as well as on a signal of its own (Ctrl-C reaches both).
    const stopRequested = worker === undefined ? io.stopRequested() : Promise.race([io.stopRequested(), primaryAsksToStop()]);
    // Loaded here, not at the top: client commands should not pay for gRPC, XState and protos.
    const { createControlPlane } = await import('../../control-plane.js');
    const controlPlane = createControlPlane(worker === undefined ? options : workerOptions(options, worker));
    if (worker !== undefined) answerMetrics(() => controlPlane.metrics.json());
    try {
      await controlPlane.start();
    } catch (error) {
      // Whatever did start (the xDS port, the store) is released before the error is reported.
      await controlPlane.stop().catch((stopError: unknown) => logger.warn({ err: stopError }, 'stopping after a failed start failed too'));
      throw error instanceof ChanceryError ? error : new StartFailedError(error);
    }
    if (worker !== undefined) reportStarted({ instance: controlPlane.instanceId, ...controlPlane.addresses });
    const signal = await stopRequested;
    logger.info({ signal }, 'stopping');
    await controlPlane.drain();
    return EXIT.ok;
  },
};

/**
 * A worker is an instance of its own: `--instance-id` names the set, and each worker adds its
 * index. Its `/metrics` are every worker's, added up: a scrape of the shared port sees the host.
 */
function workerOptions(options: ControlPlaneOptions, index: number): ControlPlaneOptions {
  return {
    ...options,
    ...(options.instanceId !== undefined && { instanceId: `${options.instanceId}-${index}` }),
    metricsSource: metricsOfAllWorkers,
  };
}
