import t from 'tap'
import { uuidv7 } from '../src/services/foundation/ids.js'

t.test('uuidv7: RFC 9562 layout, strictly increasing, unique across random-pool refills', async (t) => {
  const ids = Array.from({ length: 2_000 }, () => uuidv7())
  const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
  t.ok(
    ids.every((id) => shape.test(id)),
    'version 7, variant 10',
  )
  t.ok(
    ids.every((id, i) => i === 0 || id > ids[i - 1]!),
    'each id sorts after the one before',
  )
  t.equal(new Set(ids.map((id) => id.slice(19))).size, ids.length, 'the random tails differ (2,000 ids span several pool refills)')
  const backdated = uuidv7(Date.UTC(2020, 0, 1))
  t.equal(backdated.slice(0, 13).replace('-', ''), Date.UTC(2020, 0, 1).toString(16).padStart(12, '0'), "a given time is the id's time")
})
