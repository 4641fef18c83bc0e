import { createInstance, type InstanceOptions, type SlawInstance, type Storage } from '@slaw/core'
import { pgStorage, pgliteStorage } from '@slaw/storage-pg'
import { redisLocks } from '@slaw/lock-redis'
import { installedSecretProviders } from './secret-providers.js'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import { towerClient } from '@slaw/tower-client'
import type { StartConfig } from './config.js'

/** Assembles an instance from a config: PostgreSQL or PGlite, Redis or in-process locks, the shipped adapters. */
export async function startInstance(config: StartConfig, options: { print?: (line: string) => void } = {}): Promise<{ instance: SlawInstance; address: string }> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`))
  const storage: Storage = config.databaseUrl ? pgStorage({ url: config.databaseUrl }) : await pgliteStorage({ dataDir: config.dataDir })
  const instanceOptions: InstanceOptions = {
    storage,
    ...(config.redisUrl ? { locks: redisLocks({ url: config.redisUrl }) } : {}),
    adapters: [processAdapter(), httpAdapter()],
    // Vault, AWS and GCP secret providers, those of them that are installed.
    secretProviders: await installedSecretProviders(),
    // Always a tower client: without SVC_TOWER_URL it stays disconnected until an Operator connects it.
    tower: towerClient(
      config.tower
        ? {
            url: config.tower.url,
            mode: config.tower.mode,
            instanceId: config.tower.instanceId,
            heartbeatSec: config.tower.heartbeatSec,
            syncSec: config.tower.syncSec,
            enrollmentSecret: config.tower.enrollmentSecret,
          }
        : {},
    ),
    logger: { level: config.logLevel },
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
    await storage.close().catch(() => undefined)
    throw err
  }
  const address = await instance.listen({ port: config.port, host: config.host })
  return { instance, address }
}
