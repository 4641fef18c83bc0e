import t from 'tap'
import { createInstance, MasterKey } from '@slaw/core'
import { pgliteStorage } from '@slaw/storage-pg/pglite'
import { awsSecretsManagerProvider } from '@slaw/secrets-aws'
import { dummyCredentialsInEnvironment } from './dummy-credentials.js'
import { startSecretsManagerStandIn } from './secrets-manager-stand-in.js'

// The provider inside a whole instance, through the operator's API and the run-time resolve seam:
// an operator saves an AWS provider configuration, imports a remote secret as an external
// reference, stores a managed one in AWS next to a local one; all three resolve at run time, every
// resolve is an access event, and no value shows in a response.
const { accessKeyId, secretAccessKey } = dummyCredentialsInEnvironment()

const operatorKey = 'slaw_op_test_operator_token_0123456789'
const consumer = { type: 'routine' as const, id: '01a2016d-4579-7b3a-99bd-85bf68260299' }

void t.test('an operator uses AWS Secrets Manager through the API; values resolve at run time only', async (t) => {
  const aws = await startSecretsManagerStandIn({ accessKeyId, secretAccessKey })
  t.teardown(() => aws.close())
  const instance = await createInstance({
    storage: await pgliteStorage({ dataDir: 'memory://' }),
    operatorKey,
    logger: false,
    masterKey: MasterKey.generate(),
    secretProviders: [awsSecretsManagerProvider()],
  })
  t.teardown(() => instance.close())
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await instance.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${operatorKey}` }, ...(body ? { payload: body as object } : {}) })
    t.notMatch(res.body, /remote-db-password|managed-aws-value|local-value/, `${method} ${url}: no value in the response`)
    return { status: res.statusCode, body: res.json() }
  }
  const squadId = (await call('POST', '/api/squads', { name: 'Cloud' })).body.squad.id

  // A secret that already lives in AWS, created outside slaw.
  const outside = awsSecretsManagerProvider()
  t.teardown(() => outside.close?.())
  await outside.store({ secretId: 'prod/db-password', version: 1, value: 'remote-db-password', config: { endpoint: aws.endpoint, prefix: '' } })

  const rejected = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, { provider: 'aws_secrets_manager', name: 'aws', config: { endpoint: aws.endpoint, accessKeyId } })
  t.equal(rejected.status, 400, 'a credential in a provider configuration is refused')
  const cfg = await call('POST', `/api/squads/${squadId}/secret-provider-configs`, {
    provider: 'aws_secrets_manager',
    name: 'aws',
    config: { endpoint: aws.endpoint, region: 'us-east-1', kmsKeyId: 'alias/slaw' },
  })
  t.equal(cfg.status, 201)
  const configId = cfg.body.providerConfig.id
  t.match((await call('POST', `/api/secret-provider-configs/${configId}/health`)).body, { ok: true }, 'health through the API')

  const preview = await call('POST', `/api/squads/${squadId}/secrets/remote-import/preview`, { providerConfigId: configId, query: 'prod/' })
  t.same(
    preview.body.candidates.map((c: any) => [c.name, c.status]),
    [['prod/db-password', 'ready']],
    'the remote secret is an import candidate',
  )
  const imported = await call('POST', `/api/squads/${squadId}/secrets/remote-import`, {
    providerConfigId: configId,
    secrets: [{ externalRef: preview.body.candidates[0].externalRef, name: 'DB password', key: 'DB_PASSWORD' }],
  })
  t.match(imported.body, { imported: 1, skipped: 0, errored: 0 })
  const external = imported.body.results[0].secretId

  const managed = (await call('POST', `/api/squads/${squadId}/secrets`, { name: 'Deploy token', key: 'DEPLOY_TOKEN', providerConfigId: configId, value: 'managed-aws-value-1' })).body.secret
  t.match(managed, { provider: 'aws_secrets_manager', managedMode: 'svc_managed', latestVersion: 1 })
  t.equal((await call('POST', `/api/secrets/${managed.id}/rotate`, { value: 'managed-aws-value-2' })).body.secret.latestVersion, 2)
  const local = (await call('POST', `/api/squads/${squadId}/secrets`, { name: 'Local', key: 'LOCAL', value: 'local-value' })).body.secret
  t.equal(local.provider, 'local_encrypted')

  const resolve = (secretId: string, version: number | 'latest' = 'latest') =>
    instance.services.secrets.resolve({ squadId, secretId, version, consumer, configPath: 'env.X', actor: { type: 'system', id: 'run-engine' }, heartbeatRunId: null, issueId: null })
  t.equal(await resolve(external), 'remote-db-password', 'the imported reference resolves from AWS')
  t.equal(await resolve(managed.id), 'managed-aws-value-2', 'the managed one resolves its latest version from AWS')
  t.equal(await resolve(managed.id, 1), 'managed-aws-value-1', 'and its first version')
  t.equal(await resolve(local.id), 'local-value', 'the local one resolves too')

  aws.mode = 'forbid'
  await t.rejects(resolve(managed.id), { code: 'secret_unavailable' }, 'AWS answering 403: a clear error')
  aws.mode = 'ok'
  const events = (await call('GET', `/api/secrets/${managed.id}/access-events`)).body.events
  t.same(
    events.map((e: any) => [e.outcome, e.errorCode, e.provider]),
    [
      ['failure', 'provider_access_denied', 'aws_secrets_manager'],
      ['success', null, 'aws_secrets_manager'],
      ['success', null, 'aws_secrets_manager'],
    ],
    'every resolve, the failure too, is an access event',
  )

  t.equal((await call('DELETE', `/api/secrets/${managed.id}`)).status, 200)
  t.ok(
    aws.calls.some((c) => c.target === 'secretsmanager.DeleteSecret' && String(c.body.SecretId).includes(managed.id)),
    'deleting the managed secret deletes it in AWS',
  )
  t.equal((await call('DELETE', `/api/secrets/${external}`)).status, 200)
  t.notOk(
    aws.calls.some((c) => c.target === 'secretsmanager.DeleteSecret' && String(c.body.SecretId).includes('prod/db-password')),
    'deleting the imported reference leaves the remote secret alone',
  )
  t.equal(await outside.resolve({ ref: 'prod/db-password', config: { endpoint: aws.endpoint } }), 'remote-db-password')
})
