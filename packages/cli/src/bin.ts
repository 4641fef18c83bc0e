#!/usr/bin/env node
import { runCli } from './cli.js'

runCli(process.argv.slice(2)).then(
  (code) => {
    if (code !== undefined) process.exitCode = code
  },
  (err: unknown) => {
    process.stderr.write(`slaw: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exitCode = 1
  },
)
