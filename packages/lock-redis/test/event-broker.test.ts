import { randomUUID } from 'node:crypto'
import t from 'tap'
import { redisEventBroker } from '@slaw/lock-redis'

const url = process.env.SLAW_TEST_REDIS_URL

t.test('redisEventBroker wakes the other nodes', url ? {} : { skip: 'Redis suite skipped: set SLAW_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379) to run it' }, async (t) => {
  const channel = `slaw:test:events:${randomUUID()}`
  const a = redisEventBroker({ url: url!, channel })
  const b = redisEventBroker({ url: url!, channel })
  const other = redisEventBroker({ url: url!, channel: `${channel}:other` })
  t.teardown(async () => {
    await a.close()
    await b.close()
    await other.close()
  })
  let wakes = 0
  let otherWakes = 0
  const stop = await b.subscribe(() => wakes++)
  await other.subscribe(() => otherWakes++)
  const afterConnect = wakes
  for (let i = 0; i < 20; i++) a.publish()
  const deadline = Date.now() + 2000
  while (wakes === afterConnect && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
  t.ok(wakes > afterConnect, 'a publish on node A wakes node B')
  await new Promise((r) => setTimeout(r, 100))
  t.ok(wakes - afterConnect <= 3, `a burst of 20 publishes is folded (${wakes - afterConnect} wakes)`)
  t.ok(otherWakes <= 1, 'another channel (another instance) is not woken (only its own connect wakes it)')
  await stop()
  const before = wakes
  a.publish()
  await new Promise((r) => setTimeout(r, 200))
  t.equal(wakes, before, 'nothing after unsubscribing')
})
