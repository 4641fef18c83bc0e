import t from 'tap'
import { storageContract } from '@slaw/core/testing'
import { pgStorage } from '@slaw/storage-pg'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { freshDatabase, testDatabaseUrl } from '../../core/test/helpers/backends.js'

t.test('PGlite', async (t) => {
  storageContract(t, async () => ({ storage: await pgliteStorage({ dataDir: 'memory://' }) }))
})

t.test('PostgreSQL', testDatabaseUrl ? {} : { skip: 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL to run it' }, async (t) => {
  storageContract(t, async () => {
    const db = await freshDatabase()
    return { storage: pgStorage({ url: db.url, max: 8 }), dispose: db.dispose }
  })
})
