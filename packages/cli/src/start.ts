import { createInstance, LockUnavailableError, StorageUnavailableError, runOptionsFromEnv, type InstanceOptions, type SlawInstance, type Storage } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { redisLocks } from '@slaw/lock-redis'
import { installedSecretProviders } from './secret-providers.js'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import { towerClient } from '@slaw/tower-client'
import { towerClientOptions, type StartConfig } from './config.js'
import { masterKeyFile } from './secrets.js'

/** Assembles an instance from a config: PostgreSQL or PGlite, Redis or in-process locks, the shipped adapters. */
export async function startInstance(config: StartConfig, options: { print?: (line: string) => void } = {}): Promise<{ instance: SlawInstance; address: string }> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`))
  const storage: Storage = config.databaseUrl ? pgStorage({ url: config.databaseUrl }) : await pgliteStorage({ dataDir: config.dataDir })
  const locks = config.redisUrl ? redisLocks({ url: config.redisUrl }) : undefined
  const instanceOptions: InstanceOptions = {
    storage,
    ...(locks ? { locks } : {}),
    adapters: [processAdapter(), httpAdapter()],
    // Vault, AWS and GCP secret providers, those of them that are installed.
    secretProviders: await installedSecretProviders(),
    // Always a tower client: without SVC_TOWER_URL it stays disconnected until an Operator connects it.
    tower: towerClient(towerClientOptions(config.tower)),
    logger: { level: config.logLevel },
    // SVC_MASTER_KEY, else a key generated once into the data dir (0600); memory:// keeps a per-process key.
    ...(config.masterKey ? { masterKey: config.masterKey } : masterKeyFile(config.dataDir) ? { masterKey: { file: masterKeyFile(config.dataDir)! } } : {}),
    ...(config.metricsPort !== undefined ? { metrics: { port: config.metricsPort, host: config.metricsHost } } : {}),
    runs: runOptionsFromEnv(process.env),
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
    instance = await createInstance(instanceOptions)
  } catch (err) {
    // A failed start closes everything it opened (the Redis client, the pool), so the process ends
    // instead of hanging on a reconnecting client.
    await instanceOptions.tower?.close().catch(() => undefined)
    await locks?.close().catch(() => undefined)
    await storage.close().catch(() => undefined)
    throw new StartError(startFailure(err, config), { cause: err })
  }
  try {
    const address = await instance.listen({ port: config.port, host: config.host })
    return { instance, address }
  } catch (err) {
    await instance.close().catch(() => undefined)
    throw new StartError(startFailure(err, config), { cause: err })
  }
}

/** A start that failed, with one line that says why. */
export class StartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StartError'
  }
}

function startFailure(err: unknown, config: StartConfig): string {
  const e = err as { code?: string; message?: string }
  if (e?.code === 'EADDRINUSE') return `port ${config.port} on ${config.host} is already in use (choose another with PORT or --port)`
  if (e?.code === 'EACCES') return `no permission to listen on port ${config.port} on ${config.host}`
  if (err instanceof LockUnavailableError) return `Redis at REDIS_URL is unreachable (${err.message}); start Redis or unset REDIS_URL for in-process locks`
  if (err instanceof StorageUnavailableError) return `the database at DATABASE_URL is unreachable (${err.message})`
  return (e?.message ?? String(err)).split('\n')[0] ?? ''
}
