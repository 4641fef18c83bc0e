import t from 'tap'
import { eventually, faultProxy, seed, startInstance, startTower } from './helpers/fleet.js'

// One tower for the file (starting one is the slow part): machines named auto-* are approved by a
// rule, every other enrollment waits for an administrator.
const autoMachines = ['auto-machine-0001', 'auto-machine-0002', 'auto-machine-0003']

t.test('enrollment, gate and revocation against a real tower', async (t) => {
  const tower = await startTower(t, { autoApprove: [{ kind: 'machine_ids', machineIds: autoMachines }] })

  t.test('auto-approved: active at once, key kept in storage and never shown', async (t) => {
    const inst = await startInstance(t, { url: tower.url, machineId: autoMachines[0], instanceId: 'auto-1' })
    const status = await eventually(
      async () => {
        const s = await inst.status()
        return s.state === 'connected' && s
      },
      10_000,
      'connected',
    )
    t.equal(status.enrollmentState, 'active')
    t.equal(status.gated, false)
    t.equal(status.machineId, autoMachines[0])
    t.equal(status.instanceId, 'auto-1')
    t.equal((await inst.call('GET', '/api/squads')).status, 200, 'the API answers')
    const stored = (await inst.storage.towerState.getAll()) as { enrollment: { apiKey: string } }
    t.match(stored.enrollment.apiKey, /\S{16,}/, 'the key is kept in storage')
    t.notOk(JSON.stringify(status).includes(stored.enrollment.apiKey), 'GET /api/tower never shows the key')
    const onTower = await tower.instance('auto-1')
    t.equal(onTower.state, 'active')
    t.equal(onTower.machineId, autoMachines[0])
  })

  t.test('pending then approved: gated in enforce mode until active, polling every pollIntervalSec', async (t) => {
    const proxy = await faultProxy(t, () => tower.url)
    const inst = await startInstance(t, { url: proxy.url, machineId: 'pending-machine-01', instanceId: 'pending-1' })
    await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
    const gated = await inst.call('GET', '/api/squads')
    t.equal(gated.status, 403)
    t.equal(gated.body.code, 'instance_not_enrolled')
    t.match(gated.body.error, /waiting for its control tower to approve/)
    t.equal((await inst.call('GET', '/api/health', undefined, null)).status, 200, 'health is never gated')
    t.equal((await inst.call('GET', '/api/tower')).status, 200, 'the tower controls are never gated')
    t.equal((await inst.call('GET', '/api/tower', undefined, null)).status, 401, 'but still need a key')

    // The tower tells pollIntervalSec 1: about one poll a second, not one per client tick (0.1 s).
    // Counted over whatever time two more polls take: a loaded machine makes fewer polls per
    // second, never more, so the bound below cannot fail for a correct client.
    const polled = () => proxy.seen.get('/api/ingest/v1/enroll/poll') ?? 0
    const before = polled()
    const startedAt = Date.now()
    await eventually(async () => polled() >= before + 2, 30_000, 'two more polls')
    const polls = polled() - before
    const seconds = (Date.now() - startedAt) / 1000
    t.ok(polls <= Math.ceil(seconds) + 1, `polled ${polls} times in ${seconds.toFixed(1)} s: once a second at most`)

    const pending = await tower.instance('pending-1')
    t.ok(pending.pendingEnrollmentId, 'the tower shows a pending enrollment')
    t.equal((await tower.admin('POST', `/enrollments/${pending.pendingEnrollmentId}/approve`)).status, 200)
    await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected after approval')
    t.equal((await inst.call('GET', '/api/squads')).status, 200, 'ungated once active')
  })

  t.test('advisory mode is never gated, even while pending', async (t) => {
    const inst = await startInstance(t, { url: tower.url, mode: 'advisory', machineId: 'advisory-machine-1', instanceId: 'advisory-1' })
    await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
    t.equal((await inst.call('GET', '/api/squads')).status, 200)
    const s = await inst.status()
    t.equal(s.mode, 'advisory')
    t.equal(s.gated, false)
  })

  t.test('rejected: terminal, polling stops, gated in enforce mode', async (t) => {
    const proxy = await faultProxy(t, () => tower.url)
    const inst = await startInstance(t, { url: proxy.url, machineId: 'rejected-machine-1', instanceId: 'rejected-1' })
    await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
    const pending = await tower.instance('rejected-1')
    t.equal((await tower.admin('POST', `/enrollments/${pending.pendingEnrollmentId}/reject`)).status, 200)
    await eventually(async () => (await inst.status()).state === 'rejected', 10_000, 'rejected')
    const calls = [...proxy.seen.values()].reduce((a, b) => a + b, 0)
    await new Promise((r) => setTimeout(r, 1500))
    t.equal(
      [...proxy.seen.values()].reduce((a, b) => a + b, 0),
      calls,
      'no call reaches the tower after the rejection',
    )
    const gated = await inst.call('GET', '/api/squads')
    t.equal(gated.status, 403)
    t.equal(gated.body.code, 'instance_not_enrolled')
    t.match(gated.body.error, /rejected/)
  })

  t.test('unknown enrollment on poll: the instance enrolls again', async (t) => {
    const proxy = await faultProxy(t, () => tower.url)
    const inst = await startInstance(t, { url: proxy.url, machineId: 'notfound-machine-1', instanceId: 'notfound-1' })
    await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending')
    const enrolls = proxy.seen.get('/api/ingest/v1/enroll') ?? 0
    proxy.fail({ path: '/enroll/poll', times: 1, status: 404, code: 'enrollment_not_found' })
    t.ok(await eventually(async () => (proxy.seen.get('/api/ingest/v1/enroll') ?? 0) > enrolls, 10_000, 'a new enroll'), 'enrolled again')
    t.ok(await eventually(async () => (await inst.status()).state === 'pending', 10_000, 'pending again'), 'pending again')
  })

  t.test('revoked: 403 enrollment_revoked stops reporting and gates; re-enroll after the tower re-approves', async (t) => {
    const proxy = await faultProxy(t, () => tower.url)
    const inst = await startInstance(t, { url: proxy.url, machineId: autoMachines[1], instanceId: 'revoked-1' })
    await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected')
    await seed(inst)
    const active = await tower.instance('revoked-1')
    t.equal((await tower.admin('POST', `/enrollments/${active.enrollmentId}/revoke`)).status, 200)

    await eventually(async () => (await inst.status()).state === 'revoked', 10_000, 'revoked')
    const s = await inst.status()
    t.equal(s.enrollmentState, 'revoked')
    t.equal(s.lastError.code, 'enrollment_revoked')
    const gated = await inst.call('GET', '/api/squads')
    t.equal(gated.status, 403, 'a revoked instance in enforce mode is gated')
    t.equal(gated.body.code, 'instance_not_enrolled')
    t.match(gated.body.error, /revoked/)
    const calls = [...proxy.seen.values()].reduce((a, b) => a + b, 0)
    await new Promise((r) => setTimeout(r, 1000))
    t.equal(
      [...proxy.seen.values()].reduce((a, b) => a + b, 0),
      calls,
      'no more calls while revoked',
    )

    // Re-enrolling alone does not help: the tower still refuses the identity.
    t.equal((await inst.call('POST', '/api/tower/re-enroll')).status, 200)
    await eventually(async () => (proxy.seen.get('/api/ingest/v1/enroll') ?? 0) >= 2, 10_000, 'an enroll after re-enroll')
    await eventually(async () => (await inst.status()).state === 'revoked', 10_000, 'still revoked')
    // An administrator reverses the revocation; the next enrollment hands out a new key.
    t.equal((await tower.admin('POST', `/enrollments/${active.enrollmentId}/approve`)).status, 200)
    t.equal((await inst.call('POST', '/api/tower/re-enroll')).status, 200)
    await eventually(async () => (await inst.status()).state === 'connected', 10_000, 'connected again')
    t.equal((await inst.call('GET', '/api/squads')).status, 200)
  })
})
