import { spawnSync } from 'node:child_process'
import t from 'tap'
import { MasterKey, SecretProviderError, localEncryptedProvider, type SecretProvider } from '@slaw/core'
import { collectingContractTest, secretProviderContract } from '@slaw/core/testing'
import { nodeEntry } from '../../../scripts/node-entry.js'

// The contract kits run under node:test (each check a subtest) and under runners without run-time
// subtests, such as vitest (collectingContractTest), as well as under tap.

const key = MasterKey.generate()
const elsewhere = key.encrypt('sealed to another secret', 'slaw-secret:00000000-0000-0000-0000-000000000000:1')
const options = { valueInRef: true, emptyValues: true, unknownRefs: [elsewhere] }

/** local_encrypted, whose not_found errors quote part of the value it stored last. */
function leaking(): SecretProvider {
  const inner = localEncryptedProvider(() => key)
  let last = ''
  return {
    ...inner,
    async store(input) {
      last = input.value
      return inner.store(input)
    },
    async resolve(input) {
      try {
        return await inner.resolve(input)
      } catch {
        throw new SecretProviderError('not_found', `gone (…${last.slice(3, 14)}…)`)
      }
    },
  }
}

function nodeTest(env: Record<string, string>) {
  const entry = nodeEntry(new URL('./helpers/node-test-kit.ts', import.meta.url))
  // --test runs the file under node:test's runner; the entry's own flags (loader, conditions) come first.
  return spawnSync(process.execPath, [...entry.slice(0, -1), '--test', '--test-reporter=tap', entry[entry.length - 1]!], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 120_000 })
}

t.test('node:test: every check is a subtest and passes for a correct provider', async (t) => {
  const run = nodeTest({})
  t.equal(run.status, 0, `node --test exits 0 (stderr: ${run.stderr.slice(-2000)})`)
  t.match(run.stdout, /ok \d+ - secret provider contract: store then resolve round-trips values/, 'a check shows as its own subtest')
  t.match(run.stdout, /ok \d+ - secret provider contract: errors never contain the value/)
  t.notMatch(run.stdout, /not ok/, 'nothing failed')
})

t.test('node:test: a provider that leaks part of a value fails the check that names it', async (t) => {
  const run = nodeTest({ SLAW_KIT_FAULT: 'leak' })
  t.not(run.status, 0, 'node --test fails')
  t.match(
    run.stdout,
    /not ok \d+ - secret provider contract: a broken backend fails clearly|not ok \d+ - secret provider contract: store then resolve round-trips values/,
    'the failing check is named',
  )
})

t.test('collectingContractTest: done() resolves for a correct provider, after every check ran', async (t) => {
  const kit = collectingContractTest()
  await secretProviderContract(kit, () => localEncryptedProvider(() => key), options)
  await kit.done()
  t.same([...kit.failures.keys()], [], 'no failures')
  t.ok(
    kit.skipped.some((s) => s.name.endsWith('resolve of a deleted ref throws not_found')),
    'skips are recorded with their reason',
  )
})

t.test('collectingContractTest: done() throws one error naming every failed check', async (t) => {
  const kit = collectingContractTest()
  await secretProviderContract(kit, leaking, options)
  const error = await kit.done().then(
    () => undefined,
    (e: Error) => e,
  )
  t.ok(error, 'done() rejects')
  t.match(error?.message, /contract check\(s\) failed/)
  t.match(error?.message, /secret provider contract: errors never contain the value/, 'the leak check is named')
  t.same([...kit.failures.keys()], ['secret provider contract: errors never contain the value'], 'and only that check failed')
})
