import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { secretProviderContract } from '@slaw/core/testing'
import { directorySecretProvider } from '../src/index.js'

// The whole contract, as any provider author runs it: one line with a config for a working backend
// and one for a broken one.
void t.test('directory_files passes the secret provider contract', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'slaw-directory-provider-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  const notADirectory = join(directory, 'a-file')
  await writeFile(notADirectory, '')
  await secretProviderContract(t, () => directorySecretProvider(), {
    config: { directory },
    brokenConfig: { directory: join(notADirectory, 'below') },
    emptyValues: true,
  })
})

void t.test('files are private and refs cannot step outside the directory', async (t) => {
  const directory = await mkdtemp(join(tmpdir(), 'slaw-directory-provider-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  const provider = directorySecretProvider()
  const { ref } = await provider.store({ secretId: 'db', version: 1, value: 'hunter2', config: { directory } })
  const [file] = await readdir(join(directory, 'db'))
  t.equal((await stat(join(directory, 'db', file!))).mode & 0o777, 0o600, 'a value file is readable by its owner only')
  t.equal(ref, `db/${file}`)
  for (const evil of ['../etc/passwd', 'db/../../x', '/etc/passwd', 'db/x/y']) {
    await t.rejects(provider.resolve({ ref: evil, config: { directory } }), { name: 'SecretProviderError', code: 'not_found' }, `${evil} is not found`)
  }
})
