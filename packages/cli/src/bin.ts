#!/usr/bin/env node
import { enableCompileCache } from './compile-cache.js'
import { holdStartupFlags } from './startup-flags.js'
import { runCli } from './cli.js'

// Before the command loads anything (cli.ts imports each command's modules when it runs): new
// space stays small while slaw starts (startup-flags.ts), and modules come from Node's compile
// cache where there is one (compile-cache.ts).
holdStartupFlags()
enableCompileCache()

runCli(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`slaw: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = 1
  },
)
