import { chmod, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { sql, type Kysely } from 'kysely'
import {
  MasterKey,
  MasterKeyFileModeError,
  MasterKeyMismatchError,
  MasterKeyRequiredError,
  createInstance,
  localEncryptedProvider,
  readOrCreateKeyFile,
  registerEncryptedColumn,
  rotateMasterKey,
  type InstanceOptions,
  type SlawInstance,
  type Storage,
} from '@slaw/core'
import { pgStorage } from '@slaw/storage-pg'
import { openPglite, pgliteStorage } from '@slaw/storage-pg/pglite'
import { freshDatabase, testDatabaseUrl } from './helpers/backends.js'
import { makeApi, operatorToken, testAdapters } from './helpers/instance.js'

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'slaw-mk-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** A database that survives closing its storage: PGlite in a directory, or a fresh PostgreSQL database. */
const durable: Array<{ name: string; skip: string | undefined; make(t: Test): Promise<() => Promise<Storage>> }> = [
  {
    name: 'pglite',
    skip: undefined,
    async make(t) {
      const dir = await tempDir(t)
      return () => pgliteStorage({ dataDir: dir })
    },
  },
  {
    name: 'postgres',
    skip: testDatabaseUrl ? undefined : 'set SLAW_TEST_DATABASE_URL',
    async make(t) {
      const db = await freshDatabase()
      t.teardown(() => db.dispose())
      return async () => pgStorage({ url: db.url, max: 3 })
    },
  },
]

async function boot(storage: Storage, options: Partial<InstanceOptions> = {}): Promise<SlawInstance> {
  return createInstance({ storage, operatorKey: operatorToken, adapters: testAdapters, logger: false, ...options })
}

const resolveInput = (squadId: string, secretId: string, version: 'latest' | number = 'latest') => ({
  squadId,
  secretId,
  version,
  consumer: { type: 'routine' as const, id: '01a2016d-4579-7b3a-99bd-85bf68260299' },
  configPath: 'env.TOKEN',
  actor: { type: 'system' as const, id: 'test' },
  heartbeatRunId: null,
  issueId: null,
})

// A module of another engineer stores webhook secrets with ctx.masterKey; rotation must reach them.
registerEncryptedColumn({
  name: 'test_hooks.secret_enc',
  table: 'test_hooks',
  idColumns: ['id'],
  column: 'secret_enc',
  aadColumns: ['id'],
  aad: (r) => `test-hook:${String(r.id)}`,
})

t.test('a generated key file: mode 0600, created once, shared by concurrent starts', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'nested', 'master.key')
  const [a, b] = await Promise.all([readOrCreateKeyFile(file), readOrCreateKeyFile(file)])
  t.equal(a.keyId, b.keyId, 'two racing creators end up with one key')
  if (process.platform !== 'win32') t.equal((await stat(file)).mode & 0o777, 0o600, 'mode 0600')
  t.equal((await readOrCreateKeyFile(file)).keyId, a.keyId, 'read back on the next start')
})

t.test('createInstance: two secret providers of one type is a clear error', async (t) => {
  const storage = await pgliteStorage({ dataDir: 'memory://' })
  t.teardown(() => storage.close())
  const fake = localEncryptedProvider(() => MasterKey.generate())
  await t.rejects(boot(storage, { secretProviders: [fake] }), /two secret providers claim type "local_encrypted"/)
  const p = { ...fake, type: 'twin' }
  await t.rejects(boot(storage, { secretProviders: [p, p] }), /two secret providers claim type "twin"/)
})

for (const backend of durable) {
  t.test(`master key persistence, refusal and rotation [${backend.name}]`, backend.skip ? { skip: backend.skip } : {}, async (t) => {
    const open = await backend.make(t)
    const k1 = MasterKey.generate()
    const k2 = MasterKey.generate()

    // First start: the key id is recorded; a secret with two versions; a "webhook secret" of another module.
    let instance = await boot(await open(), { masterKey: k1.toBase64() })
    let api = await makeApi(instance, backend.name as 'pglite')
    const s = await api.seed('Keyed')
    const secret = (await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'token', value: 'first-value' })).body.secret
    t.equal((await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'second-value' })).status, 200)
    const db = (instance.storage as unknown as { db: Kysely<unknown> }).db
    await sql`create table test_hooks (id text primary key, secret_enc text not null)`.execute(db)
    await sql`insert into test_hooks values ('h1', ${k1.encrypt('hook-secret', 'test-hook:h1')})`.execute(db)
    t.equal(await instance.storage.secrets.getMasterKeyId(), k1.keyId, 'the key id is stored')
    await instance.close()

    // Another key refuses to start, in one line naming SVC_MASTER_KEY.
    const refused = await boot(await open(), { masterKey: k2 }).then(
      () => undefined,
      (err: unknown) => err,
    )
    t.type(refused, MasterKeyMismatchError)
    t.match((refused as Error).message, /SVC_MASTER_KEY/)
    t.notMatch((refused as Error).message, /\n/, 'one line')
    t.notMatch((refused as Error).message, new RegExp(k2.toBase64().slice(0, 12).replace(/[+/]/g, '.')), 'the message names key ids, never a key')

    // Forced past the check (the key id row overwritten), the wrong key refuses to decrypt: a clear error, never garbage.
    const forced = await open()
    await forced.migrate()
    await forced.secrets.setMasterKeyId(k2.keyId)
    instance = await boot(forced, { masterKey: k2 })
    await t.rejects(instance.services.secrets.resolve(resolveInput(s.squadId, secret.id)), { code: 'secret_unavailable', message: /master key .*check SVC_MASTER_KEY/ })
    const events = await instance.storage.secrets.listAccessEvents(secret.id, { limit: 5 })
    t.match(events[0], { outcome: 'failure', errorCode: 'decrypt_failed' }, 'the failure is in the access events')
    await instance.storage.secrets.setMasterKeyId(k1.keyId)
    await instance.close()

    // A rotation from the wrong old key changes nothing.
    const st = await open()
    await t.rejects(rotateMasterKey(st, MasterKey.generate(), k2), /neither the old key/)
    const report = await rotateMasterKey(st, k1, k2)
    t.same(
      report.columns.filter((c) => c.rewritten > 0),
      [
        { name: 'secret_versions.ref', rewritten: 2 },
        { name: 'test_hooks.secret_enc', rewritten: 1 },
      ],
      'every registered column is re-encrypted',
    )
    t.same(
      report.columns.map((c) => c.name).sort(),
      ['agents.webhook_secret', 'routine_triggers.secret_ciphertext', 'secret_versions.ref', 'test_hooks.secret_enc'],
      'HMAC trigger and agent webhook secrets are registered too',
    )
    t.same(
      (await rotateMasterKey(st, k1, k2)).columns.filter((c) => c.rewritten > 0),
      [],
      'running it again finds nothing left',
    )
    const versions = await st.secrets.listVersions(secret.id)
    t.ok(
      versions.every((v) => v.keyId === k2.keyId && MasterKey.envelopeKeyId(v.ref) === k2.keyId),
      'each version records the new key id',
    )
    await st.close()

    // The old key is refused now; the new key reads every version and the hook secret.
    await t.rejects(boot(await open(), { masterKey: k1 }), MasterKeyMismatchError)
    instance = await boot(await open(), { masterKey: k2 })
    t.equal(await instance.services.secrets.resolve(resolveInput(s.squadId, secret.id)), 'second-value')
    t.equal(await instance.services.secrets.resolve(resolveInput(s.squadId, secret.id, 1)), 'first-value')
    const db2 = (instance.storage as unknown as { db: Kysely<unknown> }).db
    const { rows } = await sql<{ secretEnc: string }>`select secret_enc from test_hooks where id = 'h1'`.execute(db2)
    t.equal(k2.decrypt(rows[0]!.secretEnc, 'test-hook:h1'), 'hook-secret', 'the hook secret moved to the new key')
    api = await makeApi(instance, backend.name as 'pglite')
    t.equal((await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'third' })).status, 200, 'new versions after the rotation')
    await instance.close()
  })
}

t.test('embedded storage on disk: the key is generated into the data dir and reused', async (t) => {
  const dir = await tempDir(t)
  let instance = await boot(await pgliteStorage({ dataDir: dir }))
  const api = await makeApi(instance, 'pglite')
  const s = await api.seed('Disk')
  const secret = (await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'token', value: 'on-disk' })).body.secret
  await instance.close()
  if (process.platform !== 'win32') t.equal((await stat(join(dir, 'master.key'))).mode & 0o777, 0o600, 'master.key is 0600')
  instance = await boot(await pgliteStorage({ dataDir: dir }))
  t.equal(await instance.services.secrets.resolve(resolveInput(s.squadId, secret.id)), 'on-disk', 'the next start reads it with the same key')
  await instance.close()
})

t.test(
  'PostgreSQL without a master key refuses to start, naming masterKey and SVC_MASTER_KEY (a random key would lose every secret at restart)',
  testDatabaseUrl ? {} : { skip: 'set SLAW_TEST_DATABASE_URL' },
  async (t) => {
    const db = await freshDatabase()
    t.teardown(() => db.dispose())
    const storage = pgStorage({ url: db.url, max: 2 })
    t.teardown(() => storage.close())
    const refused = await boot(storage).then(
      () => undefined,
      (err: unknown) => err,
    )
    t.type(refused, MasterKeyRequiredError)
    t.match((refused as Error).message, /masterKey/)
    t.match((refused as Error).message, /SVC_MASTER_KEY/)
    t.equal(await storage.secrets.getMasterKeyId().catch(() => undefined), undefined, 'nothing recorded')
    // With a key, the same database starts and keeps a secret across a restart.
    const key = MasterKey.generate()
    let instance = await boot(pgStorage({ url: db.url, max: 2 }), { masterKey: key })
    const api = await makeApi(instance, 'postgres')
    const s = await api.seed('Keyed PG')
    const secret = (await api.call('POST', `/api/squads/${s.squadId}/secrets`, { name: 'token', value: 'survives' })).body.secret
    await instance.close()
    instance = await boot(pgStorage({ url: db.url, max: 2 }), { masterKey: key.toBase64() })
    t.equal(await instance.services.secrets.resolve(resolveInput(s.squadId, secret.id)), 'survives', 'the restarted node reads it')
    await instance.close()
  },
)

t.test('a storage that does not say it is in memory (a PGlite on disk passed as a client) refuses to start without a key', async (t) => {
  const dir = await tempDir(t)
  const pg = await openPglite({ dataDir: dir })
  t.teardown(() => pg.close())
  await t.rejects(boot(await pgliteStorage({ client: pg })), MasterKeyRequiredError)
  // memory:// keeps the process-only key (tests, throwaway instances).
  const mem = await pgliteStorage({ dataDir: 'memory://' })
  const instance = await boot(mem)
  await instance.close()
})

t.test('a master.key open to group or others refuses to start, naming the file and chmod 600', { skip: process.platform === 'win32' ? 'POSIX modes' : undefined }, async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'master.key')
  await writeFile(file, `${MasterKey.generate().toBase64()}\n`, { mode: 0o644 })
  await chmod(file, 0o644)
  const err = await readOrCreateKeyFile(file).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.type(err, MasterKeyFileModeError)
  t.match((err as Error).message, file)
  t.match((err as Error).message, /chmod 600/)
  await t.rejects(boot(await pgliteStorage({ dataDir: 'memory://' }), { masterKey: { file } }), MasterKeyFileModeError)
  await chmod(file, 0o600)
  t.ok(await readOrCreateKeyFile(file), 'read once it is 0600')
})
