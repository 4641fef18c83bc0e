import t from 'tap'
import { storageContract } from '@slaw/core/testing'
import { pgStorage } from '@slaw/storage-pg'
import { freshDatabase, pooledPgliteStorage, testDatabaseUrl } from '../../core/test/helpers/backends.js'

t.test('PGlite', async (t) => {
  // Pooled PGlite clients, emptied between kits: the kit still migrates each (idempotently).
  storageContract(t, pooledPgliteStorage)
})

t.test('PostgreSQL', testDatabaseUrl ? {} : { skip: 'PostgreSQL suite skipped: set SLAW_TEST_DATABASE_URL to run it' }, async (t) => {
  storageContract(t, async () => {
    // A copy of the migrated template (the template itself was built by running every migration).
    const db = await freshDatabase({ migrated: true })
    return { storage: pgStorage({ url: db.url, max: 8 }), dispose: db.dispose }
  })
})
