// One slaw node for bench/routines.mjs, in its own process: createInstance on PostgreSQL with the
// job runner and the schedule poller on, listening on PORT. Run through tsx (TypeScript sources).
//   DATABASE_URL=... PORT=0 node --import tsx --conditions=slaw-source bench/routines-node.mjs
import { createInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'

const instance = await createInstance({
  storage: pgStorage({ url: process.env.DATABASE_URL, max: Number(process.env.PG_POOL ?? 10) }),
  operatorKey: process.env.SVC_OPERATOR_KEY,
  // A stand-in adapter so agents can be hired; the bench measures routines, not agent runs.
  adapters: [{ type: 'process', wake: async () => ({ status: 'succeeded' }) }],
  masterKey: process.env.SVC_MASTER_KEY,
  logger: false,
  jobs: { concurrency: Number(process.env.JOB_CONCURRENCY ?? 8), pollIntervalMs: 250 },
  scheduler: { intervalMs: 500, batchSize: 200 },
})
const address = await instance.listen({ port: Number(process.env.PORT ?? 0) })
process.send?.({ address })
const shutdown = () => instance.close().then(() => process.exit(0))
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)
