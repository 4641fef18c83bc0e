// One node of a multi-node deployment: PostgreSQL holds everything, Redis serialises checkouts.
// Start several with the same DATABASE_URL and REDIS_URL (and different PORTs) behind a load balancer.
import { createInstance, type SlawInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { redisLocks } from '@slaw/lock-redis'
import { httpAdapter, processAdapter } from '@slaw/adapters'
import { pathToFileURL } from 'node:url'

export interface NodeOptions {
  databaseUrl: string
  redisUrl: string
  operatorKey?: string
  /** Connections in this node's pool. */
  poolSize?: number
}

export async function createNode(options: NodeOptions): Promise<SlawInstance> {
  return createInstance({
    storage: pgStorage({ url: options.databaseUrl, max: options.poolSize ?? 10 }),
    locks: redisLocks({ url: options.redisUrl }),
    adapters: [processAdapter(), httpAdapter()],
    ...(options.operatorKey ? { operatorKey: options.operatorKey } : {}),
    logger: { level: process.env.LOG_LEVEL ?? 'info' },
  })
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { DATABASE_URL, REDIS_URL, SVC_OPERATOR_KEY, PORT } = process.env
  if (!DATABASE_URL || !REDIS_URL) {
    console.error('Set DATABASE_URL and REDIS_URL (and SVC_OPERATOR_KEY to choose the Operator key).')
    process.exit(2)
  }
  const node = await createNode({ databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, ...(SVC_OPERATOR_KEY ? { operatorKey: SVC_OPERATOR_KEY } : {}) })
  await node.listen({ port: Number(PORT ?? 3100), host: process.env.HOST ?? '127.0.0.1' })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void node.close().then(() => process.exit(0)))
}
