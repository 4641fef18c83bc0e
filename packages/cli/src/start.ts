import type { InstanceOptions, SlawInstance, Storage } from '@slaw/core'
import { installedSecretProviders } from './secret-providers.js'
import { towerClientOptions, type StartConfig } from './config.js'
import { join } from 'node:path'

/**
 * The storage of a config, opened. Started first and awaited last: PGlite reads its WebAssembly and
 * data, and compiles, while the rest of slaw loads. Only the storage in use is loaded.
 */
async function openStorage(config: StartConfig): Promise<Storage> {
  if (config.databaseUrl) return (await import('@slaw/storage-pg')).pgStorage({ url: config.databaseUrl })
  return (await import('@slaw/storage-pg/pglite')).pgliteStorage({ dataDir: config.dataDir })
}

/** Assembles an instance from a config: PostgreSQL or PGlite, Redis or in-process locks, the shipped adapters. */
export async function startInstance(config: StartConfig, options: { print?: (line: string) => void } = {}): Promise<{ instance: SlawInstance; address: string }> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`))
  const opening = openStorage(config)
  // Failing while the rest loads is reported below, when the storage is awaited; not as unhandled.
  opening.catch(() => undefined)
  let loaded
  try {
    loaded = await Promise.all([
      import('@slaw/core'),
      import('@slaw/adapters'),
      import('@slaw/adapter-claude'),
      import('@slaw/adapter-codex'),
      import('@slaw/tower-client'),
      // Vault, AWS and GCP secret providers, those of them that are installed.
      installedSecretProviders(),
      config.redisUrl ? import('@slaw/lock-redis') : undefined,
      // The operator console (SVC_CONSOLE=off: not even loaded).
      config.console ? import('@slaw/console') : undefined,
    ])
  } catch (err) {
    await opening.then((storage) => storage.close()).catch(() => undefined)
    throw err
  }
  const [core, { httpAdapter, processAdapter }, { claudeAdapter }, { codexAdapter }, { towerClient }, secretProviders, lockRedis, consoleApp] = loaded
  const storage = await opening
  const locks = config.redisUrl && lockRedis ? lockRedis.redisLocks({ url: config.redisUrl }) : undefined
  // The http adapter's warnings (a wake over plain http to another host) go to the instance's log.
  let warn: (message: string) => void = (message) => process.emitWarning(message, 'SlawInsecureWake')
  const instanceOptions: InstanceOptions = {
    storage,
    ...(locks ? { locks } : {}),
    // With Redis, Redis pub/sub wakes the other nodes' live event streams (else PostgreSQL NOTIFY).
    ...(config.redisUrl && lockRedis ? { eventBroker: lockRedis.redisEventBroker({ url: config.redisUrl }) } : {}),
    // claude_local and codex_local run the Claude Code and Codex CLIs found on PATH (docs/adapters.md).
    adapters: [processAdapter(), httpAdapter({ egress: config.httpEgress, warn: (message) => warn(message) }), claudeAdapter(), codexAdapter()],
    secretProviders,
    // Always a tower client: without SVC_TOWER_URL it stays disconnected until an Operator connects it.
    tower: towerClient(towerClientOptions(config.tower)),
    logger: { level: config.logLevel },
    // SVC_MASTER_KEY, else a key generated once into the data dir (0600); memory:// keeps a per-process key.
    // (secrets.ts's masterKeyFile(), inlined: importing that module would load @slaw/core before the storage starts.)
    ...(config.masterKey ? { masterKey: config.masterKey } : config.dataDir !== 'memory://' ? { masterKey: { file: join(config.dataDir, core.masterKeyFileName) } } : {}),
    ...(config.metricsPort !== undefined || config.metricsMaxSquads !== undefined
      ? {
          metrics: {
            ...(config.metricsPort !== undefined ? { port: config.metricsPort, host: config.metricsHost } : {}),
            ...(config.metricsMaxSquads !== undefined ? { maxSquads: config.metricsMaxSquads } : {}),
          },
        }
      : {}),
    runs: core.runOptionsFromEnv(process.env),
    routines: core.routineLimitsFromEnv(process.env),
    // Skill imports from disk read only inside this folder; unset: they are off.
    ...(process.env.SVC_SKILLS_DIR ? { skillsDir: process.env.SVC_SKILLS_DIR } : {}),
    authFailureLimit: config.authFailureLimit,
    ...(config.consoleSessionHours !== undefined ? { consoleSessionHours: config.consoleSessionHours } : {}),
    ...(process.env.SVC_PUBLIC_URL ? { publicUrl: process.env.SVC_PUBLIC_URL } : {}),
    ...(config.operatorKey ? { operatorKey: config.operatorKey } : {}),
    onOperatorKeyCreated: (token) => {
      // Shown once: only its hash is stored.
      print('')
      print('  A new Operator key was created for this instance. It is shown only this once:')
      print(`    ${token}`)
      print('  Keep it safe (e.g. export SVC_OPERATOR_KEY=<key> next time).')
      print('')
    },
  }
  let instance: SlawInstance
  try {
    instance = await core.createInstance(instanceOptions)
    const log = instance.log
    warn = (message) => log.warn(message)
  } catch (err) {
    // A failed start closes everything it opened (the Redis client, the pool), so the process ends
    // instead of hanging on a reconnecting client.
    await instanceOptions.tower?.close().catch(() => undefined)
    await locks?.close().catch(() => undefined)
    await storage.close().catch(() => undefined)
    throw new StartError(startFailure(err, config, core), { cause: err })
  }
  try {
    // The console at `/` (docs/console.md); its API (sign-in sessions) is part of every instance.
    if (consoleApp) await instance.app.register(consoleApp.consolePlugin())
    const address = await instance.listen({ port: config.port, host: config.host })
    return { instance, address }
  } catch (err) {
    await instance.close().catch(() => undefined)
    throw new StartError(startFailure(err, config, core), { cause: err })
  }
}

/** A start that failed, with one line that says why. */
export class StartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StartError'
  }
}

function startFailure(err: unknown, config: StartConfig, { LockUnavailableError, StorageUnavailableError }: typeof import('@slaw/core')): string {
  const e = err as { code?: string; message?: string }
  if (e?.code === 'EADDRINUSE') return `port ${config.port} on ${config.host} is already in use (choose another with PORT or --port)`
  if (e?.code === 'EACCES') return `no permission to listen on port ${config.port} on ${config.host}`
  if (err instanceof LockUnavailableError) return `Redis at REDIS_URL is unreachable (${err.message}); start Redis or unset REDIS_URL for in-process locks`
  if (err instanceof StorageUnavailableError) return `the database at DATABASE_URL is unreachable (${err.message})`
  return (e?.message ?? String(err)).split('\n')[0] ?? ''
}
