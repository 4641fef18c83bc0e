import t from 'tap'
import { demo, startFleet } from '../src/main.js'

// Three PGlite databases in one process: generous on a busy machine (tap's default is 30 s).
t.test('two instances report to one tower', { timeout: 120_000 }, async (t) => {
  const fleet = await startFleet()
  t.teardown(() => fleet.close())
  const view = await demo(fleet)
  t.same(
    view.map((v) => v.instanceId),
    ['fleet-alpha', 'fleet-beta'],
  )
  t.ok(
    view.every((v) => v.state === 'active'),
    'both enrolled',
  )
  const [alpha, beta] = view
  t.same(alpha!.issueTitles, ['Plan the alpha launch'])
  t.match(beta!.issueTitles, [/^[A-Z]+-1$/], 'beta reports identifiers instead of titles')
  t.equal(alpha!.costCents, 42)
  t.equal(beta!.costCents, 42)
})
