import { enableCompileCache } from './compile-cache.js'
import { holdStartupFlags } from './startup-flags.js'
import { runCli } from './cli.js'

/**
 * Runs the `slaw` command. The executable calls it from its bundle (bundled-program.ts), or from
 * the package's modules when there is no bundle (running from a checkout's sources).
 */
export function run(argv: string[]): void {
  // Before the command loads anything (cli.ts imports each command's modules when it runs): new
  // space stays small while slaw starts (startup-flags.ts), and modules that are not in the bundle
  // come from Node's compile cache where there is one (compile-cache.ts).
  holdStartupFlags()
  enableCompileCache()
  runCli(argv).then(
    (code) => {
      if (code !== undefined) process.exitCode = code
    },
    (err: unknown) => {
      process.stderr.write(`slaw: ${err instanceof Error ? err.message : String(err)}\n`)
      process.exitCode = 1
    },
  )
}
