import t from 'tap'
import { createHash } from 'node:crypto'
import { createInstance } from '@slaw/core'
import { backends } from './helpers/backends.js'
import { eachBackend, makeApi, operatorToken, testAdapters, testMasterKey } from './helpers/instance.js'

// A chosen Operator key (SVC_OPERATOR_KEY) used to be stored as its plain SHA-256: a dump of the
// keys table let anyone test guesses offline. Chosen keys are now stored as an HMAC under a key
// derived from the master key; keys stored the old way keep working and move to the keyed form.
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const bootstrapName = 'bootstrap (SVC_OPERATOR_KEY)'

eachBackend(t, 'a chosen Operator key is stored keyed, never as its plain SHA-256; generated keys keep working', async (t, api) => {
  const keys = await api.instance.storage.keys.listOperatorKeys()
  const chosen = keys.find((k) => k.name === bootstrapName)!
  t.match(chosen.tokenHash, /^hmac1:[0-9a-f]{64}$/, 'stored as an HMAC')
  t.equal(await api.instance.storage.keys.findByHash(sha256(operatorToken)), undefined, 'the plain SHA-256 of the chosen key is nowhere in the table')
  t.equal((await api.call('GET', '/api/squads')).status, 200, 'the chosen key authenticates')
  const created = await api.call('POST', '/api/operator-keys', { name: 'generated' })
  t.equal(created.status, 201)
  t.ok(await api.instance.storage.keys.findByHash(sha256(created.body.token)), 'generated (256-bit random) keys stay plain SHA-256: a lookup per request, nothing to guess')
  t.equal((await api.call('GET', '/api/squads', undefined, created.body.token)).status, 200)
})

for (const backend of backends) {
  t.test(`a chosen key stored as plain SHA-256 by an earlier slaw keeps working and is re-stored keyed [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { storage, dispose } = await backend.create()
    t.teardown(dispose)
    const legacyToken = 'slaw_op_chosen_by_a_human_0001'
    const other = 'slaw_op_chosen_restart_key_0002'
    const instance = await createInstance({ storage, operatorKey: other, masterKey: testMasterKey, adapters: testAdapters, logger: false, jobs: false })
    const legacy = await storage.keys.insert({
      id: '01a2016d-4579-7b3a-99bd-85bf68260201',
      kind: 'operator',
      name: bootstrapName,
      agentId: null,
      squadId: null,
      tokenHash: sha256(legacyToken),
      expiresAt: null,
    })
    const api = await makeApi(instance, backend.name)
    t.equal((await api.call('GET', '/api/squads', undefined, legacyToken)).status, 200, 'the legacy key works')
    const after = (await storage.keys.listOperatorKeys()).find((k) => k.id === legacy.id)!
    t.match(after.tokenHash, /^hmac1:/, 'and was moved to the keyed form on that first use')
    t.equal(await storage.keys.findByHash(sha256(legacyToken)), undefined, 'its plain SHA-256 is gone')
    instance.services.auth.invalidate()
    t.equal((await api.call('GET', '/api/squads', undefined, legacyToken)).status, 200, 'it keeps working keyed')
    await instance.close()
  })
}

for (const backend of backends) {
  t.test(`bootstrap moves a legacy SVC_OPERATOR_KEY row to the keyed form at start [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const { storage, dispose } = await backend.create()
    t.teardown(dispose)
    await storage.migrate()
    const legacy = await storage.keys.insert({
      id: '01a2016d-4579-7b3a-99bd-85bf68260202',
      kind: 'operator',
      name: bootstrapName,
      agentId: null,
      squadId: null,
      tokenHash: sha256(operatorToken),
      expiresAt: null,
    })
    const instance = await createInstance({ storage, operatorKey: operatorToken, masterKey: testMasterKey, adapters: testAdapters, logger: false, jobs: false })
    const rows = await storage.keys.listOperatorKeys()
    t.equal(rows.length, 1, 'no second row')
    t.equal(rows[0]!.id, legacy.id)
    t.match(rows[0]!.tokenHash, /^hmac1:/)
    t.equal((await (await makeApi(instance, backend.name)).call('GET', '/api/squads')).status, 200)
    await instance.close()
  })
}
