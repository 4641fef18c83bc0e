import t, { type Test } from 'tap'
import { createInstance, memoryLocks, type InstanceOptions, type SecretProvider, type TowerClient } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { testAdapters } from './helpers/instance.js'

// createInstance() checks plugin shapes before it touches anything, so one real storage serves
// every rejected case; the last case starts an instance with every plugin slot filled.
const storage = await pgliteStorage({ dataDir: 'memory://' })
t.teardown(() => storage.close())

const secretProvider: SecretProvider = {
  type: 'test_vault',
  configKeys: ['mount'],
  store: async () => ({ ref: 'r' }),
  resolve: async () => 'value',
  delete: async () => undefined,
  health: async () => ({ ok: true }),
}
const tower: TowerClient = { name: 'test-tower', start: async () => undefined, close: async () => undefined }

const rejects = async (t: Test, options: unknown, message: RegExp): Promise<void> => {
  await t.rejects(createInstance(options as InstanceOptions), { name: 'TypeError', message })
}

t.test('storage: missing, not an object, or missing a member', async (t) => {
  await rejects(t, undefined, /options must be an object/)
  await rejects(t, {}, /options\.storage is required \(pgStorage\(\) from @slaw\/storage-pg, or pgliteStorage\(\) from @slaw\/storage-pg\/pglite\)/)
  await rejects(t, { storage: 'postgres://x' }, /storage must be an object, got the string "postgres:\/\/x"/)
  await rejects(t, { storage: { name: 'x', migrate: async () => undefined, ping: async () => undefined, close: async () => undefined } }, /storage has no transaction \(a function\)/)
  await rejects(t, { storage: { ...shape(storage), ping: 'yes' } }, /storage\.ping must be a function, got the string "yes"/)
})

t.test('locks: the member that is missing is named', async (t) => {
  await rejects(t, { storage, locks: { name: 'redis', close: async () => undefined } }, /locks has no withLock \(a function\)/)
  await rejects(t, { storage, locks: [] }, /locks must be an object, got an array/)
})

t.test('adapters: an array of objects with type and wake', async (t) => {
  await rejects(t, { storage, adapters: [{}] }, /adapters\[0\] has no type \(a non-empty string\)/)
  await rejects(t, { storage, adapters: [{ type: 'process' }] }, /adapters\[0\] "process" has no wake \(a function\)/)
  await rejects(t, { storage, adapters: [testAdapters[0], { type: 'http', wake: async () => ({}), close: 1 }] }, /adapters\[1\] "http"\.close must be a function when given, got a number/)
  await rejects(t, { storage, adapters: testAdapters[0] }, /adapters must be an array, got an object/)
  await rejects(t, { storage, adapters: [testAdapters[0], testAdapters[0]] }, /two adapters claim type "process"/)
  await rejects(
    t,
    { storage, adapters: [{ type: 'shell', wake: async () => ({}), configSchema: { command: 'string' } }] },
    /adapters\[0\] "shell"\.configSchema must be a TypeBox object schema \(Type\.Object\) when given, got an object/,
  )
})

t.test('secretProviders: an array of providers with every required member', async (t) => {
  await rejects(t, { storage, secretProviders: 'nope' }, /secretProviders must be an array, got the string "nope"/)
  await rejects(t, { storage, secretProviders: [null] }, /secretProviders\[0\] must be an object, got null/)
  for (const member of ['type', 'configKeys', 'store', 'resolve', 'delete', 'health'] as const) {
    const { [member]: _dropped, ...rest } = secretProvider
    await rejects(t, { storage, secretProviders: [rest] }, new RegExp(`secretProviders\\[0\\]( "test_vault")? has no ${member} \\(`))
  }
  await rejects(t, { storage, secretProviders: [{ ...secretProvider, configKeys: 'mount' }] }, /secretProviders\[0\] "test_vault"\.configKeys must be an array/)
})

t.test('tower: name, start and close, optional members are functions', async (t) => {
  await rejects(t, { storage, tower: { name: 'tower', start: async () => undefined } }, /tower has no close \(a function\)/)
  await rejects(t, { storage, tower: { ...tower, gate: true } }, /tower\.gate must be a function when given, got a boolean/)
  await rejects(t, { storage, tower: () => tower }, /tower must be an object, got a function \(towerClient\(\) from @slaw\/tower-client\)/)
})

t.test('every slot filled with a valid plugin starts an instance', async (t) => {
  const instance = await createInstance({ storage, locks: memoryLocks(), adapters: testAdapters, secretProviders: [secretProvider], tower, logger: false })
  await instance.ready()
  t.equal(instance.state, 'ready')
  const res = await instance.app.inject({ method: 'GET', url: '/api/health' })
  t.equal(res.statusCode, 200)
  // close() closes the storage too; the teardown's second close is harmless.
  await instance.close()
})

/** The storage's members as a plain object (its methods live on the class prototype). */
function shape(s: object): Record<string, unknown> {
  return { name: (s as { name: string }).name, migrate: () => undefined, transaction: () => undefined, ping: () => undefined, close: () => undefined }
}
