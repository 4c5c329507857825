import { installedTool } from './installed-tool.js';

/** How a developer gets the Python these tests run: the README says the same. */
export const PYTHON_INSTALL = 'npm run python:install';

/**
 * The Python with gRPC's C-core and protobuf that `npm run python:install` made, or the one
 * `CHANCERY_TEST_PYTHON` names. Throws, naming the install command, when there is none.
 */
export function testPython(): string {
  return installedTool({ what: 'Python with grpcio and grpcio-tools', env: 'CHANCERY_TEST_PYTHON', installed: '.cache/python/bin/python', install: PYTHON_INSTALL });
}
