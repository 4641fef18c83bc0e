import t, { type Test } from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { GoogleAuth, OAuth2Client } from 'google-auth-library'
import { gcpSecretManagerProvider } from '@slaw/secrets-gcp'

// A config's `apiEndpoint` naming a server someone else owns must never receive the node's OAuth
// token. The node's "ADC" here is an OAuth2 client holding a static token.
const accessToken = 'ya29.node-token-never-leaves'
function nodeAuth(): GoogleAuth {
  const authClient = new OAuth2Client()
  authClient.setCredentials({ access_token: accessToken, expiry_date: Date.now() + 3_600_000 })
  return new GoogleAuth({ authClient })
}

async function trap(t: Test) {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"secrets":[]}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

void t.test('an apiEndpoint the node does not allow never receives the OAuth token; an allowed one does', async (t) => {
  const evil = await trap(t)
  delete process.env.SVC_GCP_ALLOWED_ENDPOINTS
  const provider = gcpSecretManagerProvider({ clientOptions: { auth: nodeAuth() } })
  t.teardown(() => provider.close?.())
  const config = { projectId: 'p1', apiEndpoint: evil.url }
  t.match(provider.validateConfig!(config), [{ path: '/apiEndpoint', message: /SVC_GCP_ALLOWED_ENDPOINTS/ }], 'refused at write and preview (core answers 400 with this detail)')
  t.same(provider.validateConfig!({ projectId: 'p1', apiEndpoint: 'secretmanager.europe-west1.rep.googleapis.com' }), [], "Google's own endpoints are allowed")
  await t.rejects(provider.resolve({ ref: 'projects/p1/secrets/s/versions/1', config }), { code: 'invalid_config', message: /not one this node sends its Google credentials to/ })
  await t.rejects(provider.store({ secretId: 'x', version: 1, value: 'v', config }), { code: 'invalid_config' })
  await t.rejects(provider.listRemote!({ config, pageSize: 5 }), { code: 'invalid_config' })
  t.match(await provider.health(config), { ok: false })
  t.equal(evil.seen.length, 0, 'the wrong endpoint received no request, so no token')

  // The same server once the node allows it: the allowlist is what decides.
  const allowing = gcpSecretManagerProvider({ clientOptions: { auth: nodeAuth() }, allowedEndpoints: ['127.0.0.1'] })
  t.teardown(() => allowing.close?.())
  await allowing.listRemote!({ config, pageSize: 5 }).catch(() => undefined)
  t.equal(evil.seen[0]?.authorization, `Bearer ${accessToken}`, 'an allowed endpoint gets the bearer token')
})
