import t from 'tap'
import { eachBackend } from './helpers/instance.js'
import { isError } from './helpers/fixtures.js'
import { createSecret, resolveInput } from './helpers/secrets.js'

eachBackend(t, 'secrets: rotate makes strictly increasing versions; 100 concurrent rotations lose none', async (t, api) => {
  const s = await api.seed('Rotating')
  const secret = await createSecret(api, s.squadId, { name: 'token', value: 'v1' })
  const { instance } = api
  const resolve = (version: 'latest' | number = 'latest') => instance.services.secrets.resolve(resolveInput(s.squadId, secret.id, { version }))
  t.equal(await resolve(), 'v1')

  const rotated = await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'v2' })
  t.equal(rotated.status, 200)
  t.match(rotated.body.secret, { latestVersion: 2 })
  t.ok(rotated.body.secret.lastRotatedAt, 'lastRotatedAt is set')
  t.equal(await resolve(), 'v2', 'latest follows the rotation')
  t.equal(await resolve(1), 'v1', 'an older version still resolves')
  isError(t, await api.call('POST', `/api/secrets/${secret.id}/rotate`, {}), 400, 'invalid_payload', 'a managed rotation needs a value')
  isError(t, await api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: 'x', externalRef: 'r' }), 400, 'invalid_payload')

  const n = 100
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => api.call('POST', `/api/secrets/${secret.id}/rotate`, { value: `c${i}` })))
  t.same(
    answers.filter((a) => a.status !== 200).map((a) => a.body),
    [],
    'every rotation succeeded',
  )
  const versions = answers.map((a) => a.body.secret.latestVersion as number).sort((a, b) => a - b)
  t.same(
    versions,
    Array.from({ length: n }, (_, i) => i + 3),
    'versions 3..102, each exactly once',
  )
  const stored = await instance.storage.secrets.listVersions(secret.id)
  t.same(
    stored.map((v) => v.version),
    Array.from({ length: n + 2 }, (_, i) => i + 1),
    'every version row is stored',
  )
  // Each version holds the value its own rotation sent.
  const byVersion = new Map(answers.map((a, i) => [a.body.secret.latestVersion as number, `c${i}`]))
  for (const v of [3, 50, 102]) t.equal(await resolve(v), byVersion.get(v), `version ${v} holds its own value`)
  t.equal((await api.call('GET', `/api/secrets/${secret.id}`)).body.secret.latestVersion, 102)
  const nonces = new Set(stored.map((v) => v.ref.split('.')[2]))
  t.equal(nonces.size, stored.length, 'a fresh nonce per version')
  t.ok(
    stored.every((v) => typeof v.keyId === 'string' && v.ref.startsWith(`v1.${v.keyId}.`)),
    'each local version records the key id its envelope names',
  )
})
