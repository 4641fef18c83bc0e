import { ConfigError, readStartConfig } from './config.js'
import { releaseStartupFlags } from './startup-flags.js'
import { flushCompileCache } from './compile-cache.js'

// Each command loads what it runs, when it runs: `slaw start` never loads the tower (or the other
// way round), and the start itself loads its storage while the rest loads (start.ts).

const usage = `Usage: slaw <command> [options]

Commands:
  start [--port N] [--host H] [--data-dir DIR]   run an instance (PGlite in ./.slaw unless DATABASE_URL is set)
  tower                                          run the reference control tower (@slaw/tower; PORT default 3200,
                                                 DATABASE_URL or SVC_TOWER_DATA_DIR, SVC_TOWER_ADMIN_KEY,
                                                 SVC_TOWER_ENROLLMENT_SECRET)
  status [--url URL] [--key KEY] [--runs N]      an instance's health, each squad's agents, issues, approvals,
                                                 month spend and runs in flight (exit 1 when not healthy)
  runs tail [--squad ID] [--url URL] [--key KEY]  follow a squad's runs live: queued, started, output, finished
  secrets rotate-master-key --from-env OLD --to-env NEW
                                                 re-encrypt local secrets and HMAC trigger secrets under a
                                                 new master key (see docs/secrets.md)
  help                                           this text

Environment: PORT, HOST, SVC_OPERATOR_KEY, DATABASE_URL, REDIS_URL, SVC_DATA_DIR (memory:// for in-memory),
SVC_MASTER_KEY, SVC_TOWER_URL, SVC_TOWER_MODE, SVC_INSTANCE_ID, SVC_TOWER_HEARTBEAT_SEC, SVC_TOWER_SYNC_SEC,
SVC_TOWER_ENROLLMENT_SECRET, SVC_METRICS_PORT, SVC_METRICS_HOST, SVC_METRICS_MAX_SQUADS, SVC_GC_HEADROOM, SVC_AUTH_FAILURE_LIMIT, SVC_AUTH_FAILURE_WINDOW_SEC,
SVC_HTTP_EGRESS_LOOPBACK, SVC_HTTP_EGRESS_PRIVATE, SVC_HTTP_EGRESS_LINK_LOCAL, SVC_CONSOLE, SVC_CONSOLE_SESSION_HOURS,
LOG_LEVEL. See docs/configuration.md.
slaw status and slaw runs tail read SVC_URL (default http://127.0.0.1:$PORT) and SVC_OPERATOR_KEY.
`

/** Runs a command; resolves to an exit code, or undefined while a server keeps the process alive. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv
  switch (command) {
    case 'start':
      return start(rest)
    case 'tower':
      return tower(rest)
    case 'secrets':
      return secrets(rest)
    case 'status':
      return inspect('status', () => import('./status.js').then((m) => m.status(rest)))
    case 'runs':
      if (rest[0] !== 'tail') {
        process.stderr.write(`slaw runs: the subcommand is "tail"\n\n${usage}`)
        return 2
      }
      return inspect('runs tail', () => import('./status.js').then((m) => m.runsTail(rest.slice(1))))
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(usage)
      return 0
    default:
      process.stderr.write(`slaw: unknown command "${command}"\n\n${usage}`)
      return 2
  }
}

async function start(argv: string[]): Promise<number | undefined> {
  let config
  try {
    config = readStartConfig(argv, process.env)
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`slaw start: ${(err as Error).message}\n`)
      return 2
    }
    throw err
  }
  const { StartError, startInstance } = await import('./start.js')
  let started
  try {
    started = await startInstance(config)
  } catch (err) {
    if (!(err instanceof StartError)) throw err
    // One line, and an exit: everything the start opened is closed already.
    process.stderr.write(`slaw start: ${err.message}\n`)
    return 1
  }
  const { instance, address } = started
  releaseStartupFlags()
  flushCompileCache()
  instance.log.info({ address, storage: instance.storage.name, locks: instance.locks.name }, 'slaw is serving')
  // Always printed, whatever LOG_LEVEL says: with `--port 0` it is how a caller learns the port.
  process.stdout.write(`slaw listening on ${address}\n`)
  if (config.console) process.stdout.write(`slaw console at ${address}/ (sign in with an Operator key)\n`)
  // A promise nobody awaited (a driver's internal bookkeeping after a dropped connection, say)
  // must not take down a server whose every request is its own transaction: log it, keep serving.
  process.on('unhandledRejection', (err) => instance.log.error({ err }, 'unhandled promise rejection; still serving'))
  onStopSignal((signal) => {
    instance.log.info({ signal }, 'draining')
    // Stop taking requests, finish in-flight ones, close plugins; then exit 0.
    return instance.close().then(() => process.stdout.write(`slaw stopped (${signal})\n`))
  })
  return undefined
}

/**
 * Stops once on SIGINT or SIGTERM, then exits 0 (1 if stopping failed). Signals that arrive while
 * stopping are absorbed: Ctrl-C under `npm start` delivers SIGINT twice (the terminal signals the
 * whole process group and npm forwards its own), and the second must not kill a draining process.
 */
function onStopSignal(stop: (signal: NodeJS.Signals) => Promise<unknown>): void {
  let stopping = false
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`slaw: stopping failed: ${err instanceof Error ? err.message : String(err)}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGINT', handle)
  process.on('SIGTERM', handle)
}

async function secrets(argv: string[]): Promise<number> {
  const { secretsCommand } = await import('./secrets.js')
  try {
    return await secretsCommand(argv, process.env, (line) => process.stdout.write(`${line}\n`))
  } catch (err) {
    if (err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`slaw secrets: ${(err as Error).message}\n`)
      return 2
    }
    throw err
  }
}

async function tower(argv: string[]): Promise<number | undefined> {
  if (argv.length) {
    process.stderr.write(`slaw tower: takes no arguments; configure it with the environment (see slaw help)\n`)
    return 2
  }
  const { startTowerFromEnv } = await import('@slaw/tower')
  const started = await startTowerFromEnv(process.env)
  releaseStartupFlags()
  flushCompileCache()
  process.stderr.write(`slaw tower: serving ingest v1 at ${started.address}/api/ingest/v1\n`)
  onStopSignal(() => started.close())
  return undefined
}

/** Runs `slaw status` or `slaw runs tail`: usage errors exit 2, an unreachable instance 1. */
async function inspect(name: string, run: () => Promise<number>): Promise<number> {
  try {
    return await run()
  } catch (err) {
    const usageError = err instanceof Error && (err.name === 'UsageError' || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
    process.stderr.write(`slaw ${name}: ${err instanceof Error ? err.message : String(err)}\n`)
    return usageError ? 2 : 1
  }
}
