import t from 'tap'
import { SecretProviderError } from '@slaw/core'
import { expectProviderFaults, expectSecretProviderError, freePort, secretProviderContract } from '@slaw/core/testing'
import { vaultProvider } from '@slaw/secrets-vault'
import { startVaultStandIn } from './vault-stand-in.js'

// Against a local stand-in speaking Vault's KV v2 HTTP API on 127.0.0.1 (real HTTP, no mocks).
const token = 'hvs.test-only-token'
// The stand-ins listen on 127.0.0.1 at random ports: this node allows that host for its token.
const env = { VAULT_TOKEN: token, SVC_VAULT_ALLOWED_ADDRESSES: '127.0.0.1' }

void t.test('vault passes the secret provider contract', async (t) => {
  const vault = await startVaultStandIn({ token, mounts: ['secret', 'kv'], namespaces: ['team-a'] })
  t.teardown(() => vault.close())
  const down = await freePort()
  await secretProviderContract(t, () => vaultProvider({ env }), {
    emptyValues: true,
    config: { address: vault.address, mount: 'kv', namespace: 'team-a', prefix: 'slaw/', timeoutMs: 5_000 },
    brokenConfig: { address: `http://127.0.0.1:${down}`, mount: 'kv' },
  })
})

void t.test('namespace and mount go where they are configured', async (t) => {
  const vault = await startVaultStandIn({ token, mounts: ['secret', 'kv'], namespaces: ['team-a'] })
  t.teardown(() => vault.close())
  const provider = vaultProvider({ env })
  const config = { address: vault.address, mount: 'kv', namespace: 'team-a' }
  const { ref } = await provider.store({ secretId: 'abc', version: 1, value: 'v-1', config })
  t.equal(ref, 'slaw/abc?version=1', 'the ref is the path under the mount with its KV version')
  t.same(vault.requests.at(-1), { method: 'POST', path: '/v1/kv/data/slaw/abc', namespace: 'team-a' }, 'written to the kv mount with the namespace header')
  await t.rejects(provider.resolve({ ref, config: { ...config, namespace: undefined } }), { code: 'not_found' }, 'the root namespace does not hold it')
  await t.rejects(provider.resolve({ ref, config: { ...config, namespace: 'team-b' } }), { code: 'access_denied' }, 'a namespace the token may not use is refused')
  await t.rejects(provider.resolve({ ref, config: { ...config, mount: 'secret' } }), { code: 'not_found' }, 'nor another mount')
  t.equal(await provider.resolve({ ref, config }), 'v-1')
})

void t.test('imported refs: the latest version, one field of several, a clear error without one', async (t) => {
  const vault = await startVaultStandIn({ token })
  t.teardown(() => vault.close())
  const config = { address: vault.address }
  const put = (path: string, data: unknown) => fetch(`${vault.address}/v1/secret/data/${path}`, { method: 'POST', headers: { 'X-Vault-Token': token }, body: JSON.stringify({ data }) })
  await put('team/db', { username: 'svc', password: 'pw-1' })
  await put('team/db', { username: 'svc', password: 'pw-2' })
  await put('team/api', { key: 'k-1' })
  const provider = vaultProvider({ env })
  t.equal(await provider.resolve({ ref: 'team/db?field=password', config }), 'pw-2', 'no version: the latest')
  t.equal(await provider.resolve({ ref: 'team/db?version=1&field=password', config }), 'pw-1', 'a version and a field')
  t.equal(await provider.resolve({ ref: 'team/api', config }), 'k-1', 'a secret with one field needs no field name')
  const failure = await provider.resolve({ ref: 'team/db', config }).catch((e: unknown) => e)
  t.ok(failure instanceof SecretProviderError && failure.code === 'not_found', 'several fields and none named: not_found')
  t.match((failure as Error).message, /holds username, password/, 'naming the fields it holds')
  t.notMatch((failure as Error).message, /pw-/, 'and no value')
  const listed = await provider.listRemote!({ config, query: 'team/', pageSize: 10 })
  t.same(
    listed,
    {
      items: [
        { externalRef: 'team/api', name: 'team/api' },
        { externalRef: 'team/db', name: 'team/db' },
      ],
    },
    'listRemote walks the folders',
  )
})

void t.test('faults: a hanging Vault times out, a 403 is access_denied, a closed port is unavailable; no value in any message', async (t) => {
  const vault = await startVaultStandIn({ token })
  t.teardown(() => vault.close())
  const provider = vaultProvider({ env })
  const config = { address: vault.address, timeoutMs: 200 }
  const value = 'fault-value-7f3a'
  const { ref } = await provider.store({ secretId: 'fault', version: 1, value, config })

  const downConfig = { address: `http://127.0.0.1:${await freePort()}` }
  const messages = { hanging: /no answer from .* within 200 ms/, forbidden: /permission denied \(HTTP 403\)/, down: /cannot reach .*ECONNREFUSED/ }
  await expectProviderFaults(t, provider, { backend: vault, config, downConfig, ref, value, messages })

  // A token Vault refuses, and none at all.
  await expectSecretProviderError(t, () => vaultProvider({ token: 'hvs.wrong', env }).resolve({ ref, config }), { what: 'a wrong token', code: 'access_denied', message: /permission denied/, value })
  await expectSecretProviderError(t, () => vaultProvider({ env: { SVC_VAULT_ALLOWED_ADDRESSES: '127.0.0.1' } }).resolve({ ref, config }), {
    what: 'no token at all',
    code: 'invalid_config',
    message: /VAULT_TOKEN/,
    value,
  })
})

void t.test('a token source is asked at each call', async (t) => {
  const vault = await startVaultStandIn({ token })
  t.teardown(() => vault.close())
  let asked = 0
  const provider = vaultProvider({ token: async () => (asked++, token), env })
  await provider.store({ secretId: 'x', version: 1, value: 'v', config: { address: vault.address } })
  t.equal(await provider.health({ address: vault.address }).then((h) => h.ok), true)
  t.equal(asked, 3, 'once per HTTP call (store, lookup-self, list)')
})

void t.test('bad config is invalid_config, never a crash', async (t) => {
  const provider = vaultProvider({ env })
  for (const [config, pattern] of [
    [{ address: 'not a url' }, /http\(s\) URL/],
    [{ mount: 7 }, /mount must be a string/],
    [{ timeoutMs: 0 }, /timeoutMs/],
    [{ token: 'hvs.x' }, /unknown config keys token/],
  ] as const) {
    await t.rejects(provider.resolve({ ref: 'a', config }), { name: 'SecretProviderError', code: 'invalid_config', message: pattern })
  }
  t.match(await provider.health({ address: 'nope' }), { ok: false, message: /http\(s\) URL/ }, 'health answers instead of throwing')
})
