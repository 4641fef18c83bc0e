import t from 'tap'
import { MasterKey, SecretProviderError, findSensitiveConfig, localEncryptedProvider, secretKeyFromName } from '@slaw/core'

const id = '01a2016d-4579-7b3a-99bd-85bf68260aaa'
const other = '01a2016d-4579-7b3a-99bd-85bf68260bbb'

t.test('local_encrypted: AES-256-GCM envelopes bound to the secret and version; a wrong key or a moved envelope never yields garbage', async (t) => {
  const key = MasterKey.generate()
  const p = localEncryptedProvider(() => key)
  t.equal(p.type, 'local_encrypted')
  t.same(p.configKeys, [])
  const { ref } = await p.store({ secretId: id, version: 1, value: 'hello wörld', config: {} })
  t.match(ref, new RegExp(`^v1\\.${key.keyId}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+$`), 'an envelope naming the key id, with a 96-bit nonce')
  t.notMatch(ref, /hello/)
  t.equal(await p.resolve({ ref, config: {}, secretId: id, version: 1 }), 'hello wörld')
  const again = await p.store({ secretId: id, version: 1, value: 'hello wörld', config: {} })
  t.not(again.ref.split('.')[2], ref.split('.')[2], 'a fresh nonce each time')

  const code = async (input: Parameters<typeof p.resolve>[0]) => {
    try {
      await p.resolve(input)
      return 'resolved'
    } catch (err) {
      t.type(err, SecretProviderError)
      t.notMatch(String((err as Error).message), /hello/, 'no value in the error')
      return `${(err as SecretProviderError).code}: ${(err as Error).message}`
    }
  }
  t.match(await code({ ref, config: {}, secretId: id, version: 2 }), /^not_found/, 'another version cannot open it (AAD)')
  t.match(await code({ ref, config: {}, secretId: other, version: 1 }), /^not_found/, 'another secret cannot open it (AAD)')
  const tampered = ref.slice(0, -2) + (ref.endsWith('A') ? 'B' : 'A') + ref.slice(-1)
  t.match(await code({ ref: tampered, config: {}, secretId: id, version: 1 }), /^not_found/, 'tampered data is refused')
  t.match(await code({ ref: 'garbage', config: {}, secretId: id, version: 1 }), /^not_found/)
  t.match(await code({ ref, config: {} }), /^invalid_config/, 'slaw always passes the secret id and version')
  const wrong = localEncryptedProvider(() => MasterKey.generate())
  t.match(
    await (async () => {
      try {
        await wrong.resolve({ ref, config: {}, secretId: id, version: 1 })
        return 'resolved'
      } catch (err) {
        return `${(err as SecretProviderError).code}: ${(err as Error).message}`
      }
    })(),
    /^access_denied: .*master key .*SVC_MASTER_KEY/,
    'a node with another key says which key and names SVC_MASTER_KEY',
  )
  t.match(await p.health({}), { ok: true })
})

t.test('sensitive provider configuration: keys at any depth and credential-looking values', async (t) => {
  t.same(findSensitiveConfig({ region: 'eu', kmsKeyId: 'alias/x', secretPrefix: 'slaw/', timeoutMs: 5, address: 'https://vault:8200' }), [], 'settings pass')
  t.same(findSensitiveConfig({ a: [{ b: { aws_secret_access_key: 'x' } }], token: 'y', Password: 'z', 'client-secret': 'w' }), [
    '/a/0/b/aws_secret_access_key',
    '/token',
    '/Password',
    '/client-secret',
  ])
  t.same(findSensitiveConfig({ headers: ['Authorization: Bearer abcdefghijklmnopqrstuv'] }), ['/headers/0'], 'a bearer token in a value')
  t.same(findSensitiveConfig({ pem: 'x', note: '-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----' }), ['/pem', '/note'])
})

t.test('a key derived from a name', async (t) => {
  t.equal(secretKeyFromName('GitHub token'), 'GitHub_token')
  t.equal(secretKeyFromName('  db.password (prod)!  '), 'db.password_prod')
  t.equal(secretKeyFromName('***'), '')
})
