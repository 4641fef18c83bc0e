import t from 'tap'
import { enrollBody, forEachBackend, heartbeatBody, identity } from './helpers/tower.js'

forEachBackend(t, {}, async (t, h) => {
  t.test('pending, approve, poll hands out the key once', async (t) => {
    const id = identity()
    const enrolled = await h.ingest('/enroll', enrollBody(id))
    t.equal(enrolled.status, 202)
    t.equal(enrolled.body.state, 'pending')
    t.equal(enrolled.body.pollIntervalSec, 10)
    t.notOk('apiKey' in enrolled.body)
    const { enrollmentId } = enrolled.body

    const again = await h.ingest('/enroll', enrollBody(id))
    t.equal(again.status, 202, 're-enrolling while pending')
    t.equal(again.body.enrollmentId, enrollmentId, 'gives the same enrollment')

    const pending = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId })
    t.equal(pending.status, 200)
    t.same(pending.body, { enrollmentId, state: 'pending', pollIntervalSec: 10 })

    const listed = await h.admin('GET', '/enrollments?state=pending&limit=500')
    t.ok(
      listed.body.items.some((e: { id: string }) => e.id === enrollmentId),
      'listed as pending',
    )

    const approved = await h.admin('POST', `/enrollments/${enrollmentId}/approve`)
    t.equal(approved.status, 200)
    t.equal(approved.body.state, 'active')
    t.equal(approved.body.keyDelivered, false)

    const first = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId })
    t.equal(first.body.state, 'active')
    t.match(first.body.apiKey, /^slaw_ik_/)
    const second = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId })
    t.equal(second.body.state, 'active')
    t.notOk('apiKey' in second.body, 'the key is shown once')

    const hb = await h.ingest('/heartbeat', heartbeatBody(), first.body.apiKey)
    t.equal(hb.status, 200)
    t.same(hb.body, { acknowledged: true, directives: [] })

    const stored = await h.tower.db.selectFrom('tower_enrollments').select('api_key_hash').where('id', '=', enrollmentId).executeTakeFirstOrThrow()
    t.not(stored.api_key_hash, first.body.apiKey, 'only a hash is stored')
    t.match(stored.api_key_hash, /^[0-9a-f]{64}$/)
  })

  t.test('concurrent polls after approval: exactly one gets the key', async (t) => {
    const enrolled = await h.ingest('/enroll', enrollBody(identity()))
    await h.admin('POST', `/enrollments/${enrolled.body.enrollmentId}/approve`)
    const polls = await Promise.all(Array.from({ length: 8 }, () => h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: enrolled.body.enrollmentId })))
    t.equal(polls.filter((p) => p.body.apiKey).length, 1)
    t.ok(polls.every((p) => p.status === 200 && p.body.state === 'active'))
  })

  t.test('concurrent enrolls of one identity create one enrollment', async (t) => {
    const id = identity()
    const replies = await Promise.all(Array.from({ length: 6 }, () => h.ingest('/enroll', enrollBody(id))))
    t.same(new Set(replies.map((r) => r.status)), new Set([202]))
    t.equal(new Set(replies.map((r) => r.body.enrollmentId)).size, 1)
  })

  t.test('reject: poll says rejected, re-enroll answers 403 enrollment_rejected', async (t) => {
    const id = identity()
    const enrolled = await h.ingest('/enroll', enrollBody(id))
    const rejected = await h.admin('POST', `/enrollments/${enrolled.body.enrollmentId}/reject`)
    t.equal(rejected.body.state, 'rejected')
    const poll = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: enrolled.body.enrollmentId })
    t.equal(poll.status, 200)
    t.equal(poll.body.state, 'rejected')
    t.notOk(poll.body.apiKey)
    const again = await h.ingest('/enroll', enrollBody(id))
    t.equal(again.status, 403)
    t.same(again.body, { error: again.body.error, code: 'enrollment_rejected' })
    const revokePending = await h.admin('POST', `/enrollments/${enrolled.body.enrollmentId}/revoke`)
    t.equal(revokePending.status, 422, 'only an active enrollment can be revoked')
    t.equal(revokePending.body.code, 'invalid_state')

    // An administrator may reverse the rejection; the key is then handed out once.
    await h.admin('POST', `/enrollments/${enrolled.body.enrollmentId}/approve`)
    const recovered = await h.ingest('/enroll', enrollBody(id))
    t.equal(recovered.status, 200)
    t.match(recovered.body.apiKey, /^slaw_ik_/)
  })

  t.test('revoke: the key answers 403 enrollment_revoked', async (t) => {
    const { apiKey, enrollmentId, identity: id } = await enrolledByApproval()
    t.equal((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).status, 200)
    const revoked = await h.admin('POST', `/enrollments/${enrollmentId}/revoke`)
    t.equal(revoked.body.state, 'revoked')
    for (const path of ['/heartbeat', '/sync', '/manifest']) {
      const res = await h.ingest(path, heartbeatBody(), apiKey)
      t.equal(res.status, 403, path)
      t.same(res.body, { error: res.body.error, code: 'enrollment_revoked' })
    }
    const skills = await h.call('GET', '/api/ingest/v1/skills', { key: apiKey })
    t.equal(skills.status, 403)
    t.equal(skills.body.code, 'enrollment_revoked')
    const poll = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId })
    t.equal(poll.body.state, 'revoked')
    const again = await h.ingest('/enroll', enrollBody(id))
    t.equal(again.status, 403)
    t.equal(again.body.code, 'enrollment_revoked')
  })

  t.test('re-enrolling an active identity asks for key recovery; approval supersedes the old key', async (t) => {
    const { apiKey, identity: id } = await enrolledByApproval()
    const recovery = await h.ingest('/enroll', enrollBody(id))
    t.equal(recovery.status, 202)
    t.equal(recovery.body.state, 'pending')
    t.equal((await h.ingest('/heartbeat', heartbeatBody(), apiKey)).status, 200, 'the old key works until the new one is approved')
    await h.admin('POST', `/enrollments/${recovery.body.enrollmentId}/approve`)
    const poll = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: recovery.body.enrollmentId })
    t.match(poll.body.apiKey, /^slaw_ik_/)
    t.equal((await h.ingest('/heartbeat', heartbeatBody(), poll.body.apiKey)).status, 200)
    const old = await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    t.equal(old.status, 403)
    t.equal(old.body.code, 'enrollment_revoked')
  })

  t.test('unknown and malformed enrollment ids', async (t) => {
    for (const enrollmentId of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', "'; drop table x; --", 'x'.repeat(128)]) {
      const res = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId })
      t.equal(res.status, 404, enrollmentId)
      t.same(res.body, { error: res.body.error, code: 'enrollment_not_found' })
    }
    const tooLong = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: 'x'.repeat(129) })
    t.equal(tooLong.status, 400)
    for (const path of ['/enrollments/nope/approve', '/enrollments/00000000-0000-4000-8000-000000000000/approve', '/enrollments/%00/reject']) {
      const res = await h.admin('POST', path)
      t.equal(res.status, 404, path)
      t.equal(res.body.code, 'not_found')
    }
  })

  t.test('auto-approve rules from the admin API', async (t) => {
    const rule = await h.admin('POST', '/auto-approve-rules', { kind: 'hostname', pattern: '*.fleet.example' })
    t.equal(rule.status, 201)
    const matching = await h.ingest('/enroll', enrollBody(identity({ hostname: 'build-7.fleet.example' })))
    t.equal(matching.status, 200)
    t.equal(matching.body.state, 'active')
    t.match(matching.body.apiKey, /^slaw_ik_/)
    const other = await h.ingest('/enroll', enrollBody(identity({ hostname: 'laptop.home' })))
    t.equal(other.status, 202)

    const byId = identity()
    const idRule = await h.admin('POST', '/auto-approve-rules', { kind: 'machine_ids', machineIds: [byId.machineId] })
    t.equal((await h.ingest('/enroll', enrollBody(byId))).status, 200)

    const rules = await h.admin('GET', '/auto-approve-rules')
    t.equal(rules.body.items.length, 2)
    t.equal((await h.admin('DELETE', `/auto-approve-rules/${rule.body.id}`)).status, 200)
    t.equal((await h.admin('DELETE', `/auto-approve-rules/${idRule.body.id}`)).status, 200)
    t.equal((await h.admin('DELETE', `/auto-approve-rules/${idRule.body.id}`)).status, 404)
    t.equal((await h.ingest('/enroll', enrollBody(identity({ hostname: 'build-8.fleet.example' })))).status, 202, 'rule removed')
    t.equal((await h.admin('POST', '/auto-approve-rules', { kind: 'sometimes' })).status, 400)
  })

  t.test('instances list shows state and liveness', async (t) => {
    const { apiKey, instancePk } = await enrolledByApproval()
    await h.ingest('/heartbeat', heartbeatBody(), apiKey)
    const one = await h.admin('GET', `/instances/${instancePk}`)
    t.equal(one.status, 200)
    t.equal(one.body.state, 'active')
    t.equal(one.body.online, true)
    t.same(one.body.counts, { squads: 1, agents: 2, activeRuns: 0, openIssues: 3 })
    t.same(one.body.spend, { todayCents: 12, monthCents: 345 })
    // Three missed heartbeats later it is offline.
    await h.tower.db
      .updateTable('tower_instances')
      .set({ last_seen_at: new Date(Date.now() - 181_000) })
      .where('id', '=', instancePk)
      .execute()
    t.equal((await h.admin('GET', `/instances/${instancePk}`)).body.online, false)
    const offline = await h.admin('GET', '/instances?online=false&limit=500')
    t.ok(offline.body.items.some((i: { id: string }) => i.id === instancePk))
    // Any authenticated call is proof of life.
    await h.call('GET', '/api/ingest/v1/skills', { key: apiKey })
    t.equal((await h.admin('GET', `/instances/${instancePk}`)).body.online, true)
    t.equal((await h.admin('GET', '/instances/not-a-uuid')).status, 404)
  })

  t.test('admin API needs the admin key', async (t) => {
    t.equal((await h.call('GET', '/api/admin/instances')).status, 401)
    const wrong = await h.call('GET', '/api/admin/instances', { key: 'wrong-key' })
    t.equal(wrong.status, 401)
    t.same(wrong.body, { error: wrong.body.error, code: 'unauthorized' })
    const { apiKey } = await enrolledByApproval()
    t.equal((await h.call('GET', '/api/admin/instances', { key: apiKey })).status, 401, 'an instance key is not an admin key')
  })

  async function enrolledByApproval() {
    const id = identity()
    const enrolled = await h.ingest('/enroll', enrollBody(id))
    await h.admin('POST', `/enrollments/${enrolled.body.enrollmentId}/approve`)
    const poll = await h.ingest('/enroll/poll', { protocolVersion: 1, enrollmentId: enrolled.body.enrollmentId })
    const row = await h.tower.db.selectFrom('tower_instances').select('id').where('machine_id', '=', id.machineId).executeTakeFirstOrThrow()
    return { apiKey: poll.body.apiKey as string, enrollmentId: enrolled.body.enrollmentId as string, identity: id, instancePk: row.id }
  }
})

forEachBackend(t, { autoApprove: true, enrollmentSecret: 'fleet-secret-42' }, async (t, h) => {
  t.test('enrollment secret: required, in the body or the header', async (t) => {
    const missing = await h.ingest('/enroll', enrollBody(identity()))
    t.equal(missing.status, 401)
    t.same(missing.body, { error: missing.body.error, code: 'enrollment_secret_required' })
    const wrong = await h.ingest('/enroll', enrollBody(identity(), { enrollmentSecret: 'guess' }))
    t.equal(wrong.status, 401)
    t.equal(wrong.body.code, 'enrollment_secret_required')
    const count = await h.tower.db
      .selectFrom('tower_instances')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    t.equal(Number(count.n), 0, 'nothing is written without the secret')
    const inBody = await h.ingest('/enroll', enrollBody(identity(), { enrollmentSecret: 'fleet-secret-42' }))
    t.equal(inBody.status, 200, 'auto-approved with the secret in the body')
    t.match(inBody.body.apiKey, /^slaw_ik_/)
    const inHeader = await h.ingest('/enroll', enrollBody(identity()), null, { headers: { 'x-enrollment-secret': 'fleet-secret-42' } })
    t.equal(inHeader.status, 200)
    const referenceHeader = await h.ingest('/enroll', enrollBody(identity()), null, { headers: { 'x-botfather-enrollment-secret': 'fleet-secret-42' } })
    t.equal(referenceHeader.status, 200, "the reference tower's header name is accepted too")
    const wrongReference = await h.ingest('/enroll', enrollBody(identity()), null, { headers: { 'x-botfather-enrollment-secret': 'nope-nope-nope' } })
    t.equal(wrongReference.status, 401)
  })
})
