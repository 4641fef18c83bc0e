#!/usr/bin/env node
import { runBundledProgram } from './bundled-program.js'

// The built package runs the command from one bundled file with a code cache (bundled-program.ts);
// without a bundle (a checkout's sources, SLAW_UNBUNDLED=1) it loads the package's modules.
const argv = process.argv.slice(2)
if (!runBundledProgram(argv)) void import('./run.js').then((m) => m.run(argv))
