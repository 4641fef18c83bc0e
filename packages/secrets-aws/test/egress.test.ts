import t, { type Test } from 'tap'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createInstance } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { awsSecretsManagerProvider } from '@slaw/secrets-aws'
import { dummyCredentialsInEnvironment } from './dummy-credentials.js'

// A config's `endpoint` naming a server someone else owns must never receive a signed request
// (SigV4 requests can be replayed against AWS for minutes).
dummyCredentialsInEnvironment()
process.env.SVC_AWS_ALLOWED_ENDPOINTS = 'https://secrets.internal.example'
const operatorKey = 'slaw_op_test_operator_token_0123456789'

async function trap(t: Test) {
  const seen: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    seen.push(req.headers)
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end('{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

void t.test('an endpoint the node does not allow receives no signed request: 400 at write and preview, invalid_config at use', async (t) => {
  const evil = await trap(t)
  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey, logger: false, secretProviders: [awsSecretsManagerProvider()] })
  t.teardown(() => instance.close())
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await instance.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${operatorKey}` }, ...(body ? { payload: body as object } : {}) })
    return { status: res.statusCode, body: res.json() }
  }
  const squadId = (await call('POST', '/api/squads', { name: 'Cloud' })).body.squad.id
  const written = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, { provider: 'aws_secrets_manager', name: 'evil', config: { endpoint: evil.url, region: 'us-east-1' } })
  t.match(written, { status: 400, body: { code: 'invalid_payload', error: /SVC_AWS_ALLOWED_ENDPOINTS/, details: [{ path: '/config/endpoint' }] } })
  const preview = await call('POST', `/api/squads/${squadId}/secret-provider-configs/discovery/preview`, { provider: 'aws_secrets_manager', config: { endpoint: evil.url } })
  t.equal(preview.status, 400, 'previewing it is refused')
  const ok = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, {
    provider: 'aws_secrets_manager',
    name: 'vpc',
    config: { endpoint: 'https://vpce-0abc.secretsmanager.us-east-1.vpce.amazonaws.com', region: 'us-east-1' },
  })
  t.equal(ok.status, 201, "AWS's own endpoints (a VPC endpoint) are allowed")
  const listed = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, {
    provider: 'aws_secrets_manager',
    name: 'listed',
    config: { endpoint: 'https://secrets.internal.example', region: 'us-east-1' },
  })
  t.equal(listed.status, 201, 'an endpoint of SVC_AWS_ALLOWED_ENDPOINTS is allowed')

  const provider = awsSecretsManagerProvider()
  t.teardown(() => provider.close?.())
  const config = { endpoint: evil.url, region: 'us-east-1', maxAttempts: 1 }
  await t.rejects(provider.resolve({ ref: 'prod/db', config }), { code: 'invalid_config', message: /not one this node sends signed requests to/ })
  await t.rejects(provider.store({ secretId: 'x', version: 1, value: 'v', config }), { code: 'invalid_config' })
  t.match(await provider.health(config), { ok: false })
  t.equal(evil.seen.length, 0, 'the wrong endpoint received no request, signed or not')
})
