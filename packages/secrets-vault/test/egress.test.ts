import t, { type Test } from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { vaultProvider } from '@slaw/secrets-vault'
import { startVaultStandIn } from './vault-stand-in.js'

// An Operator (or whoever holds an Operator key) writes a provider config whose address is a server
// they own: the node's VAULT_TOKEN must never reach it, not at write, preview, health or resolve.
const token = 'hvs.node-token-never-leaves-0001'
const operatorKey = 'slaw_op_test_operator_token_0123456789'

/** A real HTTP server standing in for the wrong address; it records every request's headers. */
async function trap(t: Test) {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{"keys":[]}}')
  })
  await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  // `localhost`, not 127.0.0.1: the node allows its real Vault (VAULT_ADDR) only.
  return { url: `http://localhost:${(server.address() as AddressInfo).port}`, seen }
}

void t.test('a config address the node does not allow never receives the token: 400 at write and preview, invalid_config at use', async (t) => {
  const vault = await startVaultStandIn({ token })
  t.teardown(() => vault.close())
  const evil = await trap(t)
  const env = { VAULT_TOKEN: token, VAULT_ADDR: vault.address }
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false, secretProviders: [vaultProvider({ env })] })
  t.teardown(() => instance.close())
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await instance.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${operatorKey}` }, ...(body ? { payload: body as object } : {}) })
    return { status: res.statusCode, body: res.json() }
  }
  const squadId = (await call('POST', '/api/squads', { name: 'Vaulted' })).body.squad.id

  const written = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, { provider: 'vault', name: 'evil', config: { address: evil.url } })
  t.equal(written.status, 400, 'writing the config is refused')
  t.match(written.body, { code: 'invalid_payload', error: /SVC_VAULT_ALLOWED_ADDRESSES/, details: [{ path: '/config/address' }] })
  const preview = await call('POST', `/api/squads/${squadId}/secret-provider-configs/discovery/preview`, { provider: 'vault', config: { address: evil.url } })
  t.equal(preview.status, 400, 'previewing it is refused')
  const good = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, { provider: 'vault', name: 'good', config: { address: vault.address } })
  t.equal(good.status, 201, "the node's own VAULT_ADDR is fine")
  const patched = await call('PATCH', `/api/secret-provider-configs/${good.body.providerConfig.id}`, { config: { address: evil.url } })
  t.equal(patched.status, 400, 'patching the address to the wrong one is refused')

  // Used directly (a config saved before the node narrowed its allowlist): refused before any request.
  const provider = vaultProvider({ env })
  const config = { address: evil.url }
  await t.rejects(provider.resolve({ ref: 'slaw/x?version=1', config }), { code: 'invalid_config', message: /not one this node sends its Vault token to/ })
  await t.rejects(provider.store({ secretId: 'x', version: 1, value: 'v', config }), { code: 'invalid_config' })
  await t.rejects(provider.listRemote!({ config, pageSize: 10 }), { code: 'invalid_config' })
  t.match(await provider.health(config), { ok: false, message: /not one this node sends/ })
  t.same(
    provider.validateConfig!(config).map((p) => p.path),
    ['/address'],
  )
  t.equal(evil.seen.length, 0, 'the wrong address received no request at all, so no token')

  // An address the node's environment allows is used as before.
  const allowing = vaultProvider({ env: { ...env, SVC_VAULT_ALLOWED_ADDRESSES: 'https://other.example:8200, localhost' } })
  t.same(allowing.validateConfig!(config), [], 'allowed by SVC_VAULT_ALLOWED_ADDRESSES (a bare host: any port)')
  await allowing.health(config)
  t.equal(evil.seen.length > 0 && evil.seen[0]!['x-vault-token'], token, 'an allowed address gets the token (the allowlist is what decides)')
})
