import t from 'tap'
import { GoogleAuth, OAuth2Client } from 'google-auth-library'
import { expectProviderFaults, expectSecretProviderError, freePort, secretProviderContract } from '@slaw/core/testing'
import { gcpSecretManagerProvider } from '@slaw/secrets-gcp'
import { startSecretManagerStandIn } from './secret-manager-stand-in.js'

// Against a local stand-in speaking Secret Manager's REST API (v1 JSON) on 127.0.0.1, through the
// client library's REST transport. Auth, in this test only: an OAuth2 client holding a static
// access token, injected as `auth`, so the Bearer header goes over the wire as ADC's would.
const accessToken = 'ya29.stand-in-test-token'
// The stand-ins listen on 127.0.0.1 at random ports: this node allows that host.
process.env.SVC_GCP_ALLOWED_ENDPOINTS = '127.0.0.1'
function testAuth(token = accessToken): GoogleAuth {
  const authClient = new OAuth2Client()
  authClient.setCredentials({ access_token: token, expiry_date: Date.now() + 3_600_000 })
  return new GoogleAuth({ authClient })
}
const provider = (token?: string) => gcpSecretManagerProvider({ clientOptions: { auth: testAuth(token) } })

void t.test('gcp_secret_manager passes the secret provider contract', async (t) => {
  const gcp = await startSecretManagerStandIn({ token: accessToken })
  t.teardown(() => gcp.close())
  const down = await freePort()
  await secretProviderContract(t, () => provider(), {
    config: { projectId: gcp.projectId, apiEndpoint: gcp.endpoint, prefix: 'slaw-', timeoutMs: 5_000 },
    brokenConfig: { projectId: gcp.projectId, apiEndpoint: `http://127.0.0.1:${down}` },
    // The stand-in enforces Secret Manager's 64 KiB payload limit.
    largeValueLength: 60_000,
  })
  t.ok(gcp.requests.length > 0 && gcp.requests.every((r) => r.token === accessToken), 'every request carried the bearer token')
  t.ok(
    gcp.requests.every((r) => r.query.$alt === 'json;enum-encoding=int'),
    'every request went through the REST transport',
  )
})

void t.test('the wire: create with replication and labels, add versions, destroy, delete the secret with its last version', async (t) => {
  const gcp = await startSecretManagerStandIn({ token: accessToken })
  t.teardown(() => gcp.close())
  const p = provider()
  t.teardown(() => p.close?.())
  const config = { projectId: gcp.projectId, apiEndpoint: gcp.endpoint, replicationLocations: ['europe-west1', 'europe-west4'], kmsKeyName: 'projects/k/locations/europe/keyRings/r/cryptoKeys/slaw' }
  const one = await p.store({ secretId: 'abc', version: 1, value: 'v-1', config })
  const two = await p.store({ secretId: 'abc', version: 2, value: 'v-2', config })
  t.same([one.ref, two.ref], ['projects/123456789012/secrets/slaw-abc/versions/1', 'projects/123456789012/secrets/slaw-abc/versions/2'], 'refs are version resource names')
  t.same(
    gcp.requests.slice(0, 4).map((r) => `${r.method} ${r.path}`),
    [
      'POST /v1/projects/slaw-test/secrets/slaw-abc:addVersion',
      'POST /v1/projects/slaw-test/secrets',
      'POST /v1/projects/slaw-test/secrets/slaw-abc:addVersion',
      'POST /v1/projects/slaw-test/secrets/slaw-abc:addVersion',
    ],
    'the first store creates the secret after a NOT_FOUND, the second only adds a version',
  )
  t.equal(gcp.requests[1]!.query.secretId, 'slaw-abc')
  t.equal(await p.resolve({ ref: 'projects/123456789012/secrets/slaw-abc', config }), 'v-2', 'a secret name reads latest')
  t.equal(await p.resolve({ ref: 'slaw-abc', config }), 'v-2', 'so does a bare secret id, in the configured project')
  await p.delete({ ref: one.ref, config })
  t.equal(await p.resolve({ ref: two.ref, config }), 'v-2', 'destroying one version keeps the other')
  await p.delete({ ref: two.ref, config })
  t.match(gcp.requests.at(-1), { method: 'DELETE', path: '/v1/projects/123456789012/secrets/slaw-abc' }, 'the secret goes with its last version')
  t.same(await p.listRemote!({ config, pageSize: 10 }), { items: [] }, 'and leaves listings')
  await p.store({ secretId: 'listed', version: 1, value: 'x', config })
  t.same(
    (await p.listRemote!({ config, query: 'list', pageSize: 10 })).items.map((i) => i.name),
    ['slaw-listed'],
    'a name filter',
  )
  t.same(await p.listRemote!({ config, query: 'a OR b', pageSize: 10 }), { items: [] }, 'a query no secret id can hold matches nothing, and never becomes filter syntax')
})

void t.test('faults: a hanging endpoint times out, 403 is access_denied, a closed port is unavailable; no value in any message', async (t) => {
  const gcp = await startSecretManagerStandIn({ token: accessToken })
  t.teardown(() => gcp.close())
  const p = provider()
  t.teardown(() => p.close?.())
  const config = { projectId: gcp.projectId, apiEndpoint: gcp.endpoint, timeoutMs: 300 }
  const value = 'fault-value-41d8'
  const { ref } = await p.store({ secretId: 'fault', version: 1, value, config })

  const downConfig = { projectId: gcp.projectId, apiEndpoint: `http://127.0.0.1:${await freePort()}` }
  const messages = {
    hanging: /no answer from http:\/\/127\.0\.0\.1:\d+ within 300 ms/,
    forbidden: /permission denied, PERMISSION_DENIED \(Permission 'secretmanager.versions.access' denied/,
    down: /cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
  }
  await expectProviderFaults(t, p, { backend: gcp, config, downConfig, ref, value, messages })

  // Credentials the backend refuses.
  const stranger = provider('ya29.someone-else')
  t.teardown(() => stranger.close?.())
  await expectSecretProviderError(t, () => stranger.resolve({ ref, config }), { what: 'a token the API refuses', code: 'access_denied', message: /UNAUTHENTICATED/, value })
})

void t.test('bad config is invalid_config, never a crash', async (t) => {
  const p = provider()
  t.teardown(() => p.close?.())
  for (const [config, pattern] of [
    [{ apiEndpoint: 'http://x/y/z' }, /apiEndpoint must be/],
    [{ replicationLocations: [] }, /replicationLocations/],
    [{ credentials: { private_key: 'x' } }, /unknown config keys credentials/],
    [{ prefix: 'bad/prefix' }, /prefix may hold only/],
  ] as const) {
    await t.rejects(p.resolve({ ref: 'projects/p/secrets/s', config }), { name: 'SecretProviderError', code: 'invalid_config', message: pattern })
  }
  t.match(await p.health({ prefix: 'bad/prefix' }), { ok: false, message: /prefix may hold only/ })
})
