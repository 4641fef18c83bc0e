// One node for bench/events.mjs: an instance on the given PostgreSQL database, listening on the
// given port, from this checkout's sources (started under tsx with the slaw-source condition). It
// answers "memory" over IPC with its memory after a full GC.
import { createInstance } from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'

const [url, port, operatorKey] = process.argv.slice(2)
const instance = await createInstance({
  storage: pgStorage({ url, max: 10 }),
  operatorKey,
  masterKey: '7e'.repeat(32),
  logger: false,
  jobs: false,
  events: { maxStreamsPerKey: 100_000 },
})
const address = await instance.listen({ port: Number(port) })
process.on('message', async (m) => {
  if (m === 'memory') {
    for (let i = 0; i < 3; i++) globalThis.gc?.()
    await new Promise((r) => setTimeout(r, 50))
    const { rss, heapUsed, external } = process.memoryUsage()
    process.send({ rss, heapUsed, external })
  } else if (m === 'close') {
    await instance.close()
    process.exit(0)
  }
})
process.send({ address })
