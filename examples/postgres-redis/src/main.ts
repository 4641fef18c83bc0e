// One node of a multi-node deployment: PostgreSQL holds everything, Redis serialises checkouts.
// Start several with the same DATABASE_URL, REDIS_URL and SVC_MASTER_KEY (and different PORTs) behind a
// load balancer. The master key is required: PostgreSQL outlives the process, and every node must read
// what another encrypted (local secrets, webhook secrets).
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { redisLocks } from '@slaw/lock-redis'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import { pathToFileURL } from 'node:url'

export interface NodeOptions {
  databaseUrl: string
  redisUrl: string
  operatorKey?: string
  /** The master key (SVC_MASTER_KEY: 32 bytes, 64 hex digits or base64); the same on every node. */
  masterKey: string
  /** Connections in this node's pool. */
  poolSize?: number
}

export async function createNode(options: NodeOptions): Promise<SlawInstance> {
  const storage = pgStorage({ url: options.databaseUrl, max: options.poolSize ?? 10 })
  const locks = redisLocks({ url: options.redisUrl })
  try {
    return await createInstance({
      storage,
      locks,
      adapters: [processAdapter(), httpAdapter()],
      // Without one, createInstance refuses to start (MasterKeyRequiredError names SVC_MASTER_KEY).
      ...(options.masterKey ? { masterKey: options.masterKey } : {}),
      ...(options.operatorKey ? { operatorKey: options.operatorKey } : {}),
      logger: { level: process.env.LOG_LEVEL ?? 'info' },
    })
  } catch (err) {
    // A node that cannot start (no key, another key) closes what it opened.
    await locks.close().catch(() => undefined)
    await storage.close().catch(() => undefined)
    throw err
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { DATABASE_URL, REDIS_URL, SVC_MASTER_KEY, SVC_OPERATOR_KEY, PORT } = process.env
  if (!DATABASE_URL || !REDIS_URL || !SVC_MASTER_KEY) {
    console.error('Set DATABASE_URL, REDIS_URL and SVC_MASTER_KEY (the same on every node; `openssl rand -base64 32`), and SVC_OPERATOR_KEY to choose the Operator key.')
    process.exit(2)
  }
  const node = await createNode({ databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, masterKey: SVC_MASTER_KEY, ...(SVC_OPERATOR_KEY ? { operatorKey: SVC_OPERATOR_KEY } : {}) })
  await node.listen({ port: Number(PORT ?? 3100), host: process.env.HOST ?? '127.0.0.1' })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void node.close().then(() => process.exit(0)))
}
