import { ConfigError, readStartConfig } from './config.js'
import { startInstance } from './start.js'
import { startTowerFromEnv } from '@slaw/tower'

const usage = `Usage: slaw <command> [options]

Commands:
  start [--port N] [--host H] [--data-dir DIR]   run an instance (PGlite in ./.slaw unless DATABASE_URL is set)
  tower                                          run the reference control tower (@slaw/tower; PORT default 3200,
                                                 DATABASE_URL or SVC_TOWER_DATA_DIR, SVC_TOWER_ADMIN_KEY,
                                                 SVC_TOWER_ENROLLMENT_SECRET)
  help                                           this text

Environment: PORT, HOST, SVC_OPERATOR_KEY, DATABASE_URL, REDIS_URL, SVC_DATA_DIR (memory:// for in-memory),
SVC_MASTER_KEY, SVC_TOWER_URL, SVC_TOWER_MODE, SVC_INSTANCE_ID, SVC_TOWER_HEARTBEAT_SEC, SVC_TOWER_SYNC_SEC,
SVC_TOWER_ENROLLMENT_SECRET, LOG_LEVEL. See docs/configuration.md.
`

/** Runs a command; resolves to an exit code, or undefined while a server keeps the process alive. */
export async function runCli(argv: string[]): Promise<number | undefined> {
  const [command, ...rest] = argv
  switch (command) {
    case 'start':
      return start(rest)
    case 'tower':
      return tower(rest)
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
  const { instance, address } = await startInstance(config)
  instance.log.info({ address, storage: instance.storage.name, locks: instance.locks.name }, 'slaw is serving')
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    instance.log.info({ signal }, 'draining')
    // Stop taking requests, finish in-flight ones, close plugins; then exit 0.
    instance.close().then(
      () => process.exit(0),
      (err: unknown) => {
        instance.log.error({ err }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.once('SIGINT', () => stop('SIGINT'))
  process.once('SIGTERM', () => stop('SIGTERM'))
  return undefined
}

async function tower(argv: string[]): Promise<number | undefined> {
  if (argv.length) {
    process.stderr.write(`slaw tower: takes no arguments; configure it with the environment (see slaw help)\n`)
    return 2
  }
  const started = await startTowerFromEnv(process.env)
  process.stderr.write(`slaw tower: serving ingest v1 at ${started.address}/api/ingest/v1\n`)
  let stopping = false
  const stop = () => {
    if (stopping) return
    stopping = true
    started.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  return undefined
}
