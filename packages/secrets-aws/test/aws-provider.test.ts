import t from 'tap'
import { expectProviderFaults, expectSecretProviderError, freePort, secretProviderContract } from '@slaw/core/testing'
import { awsSecretsManagerProvider } from '@slaw/secrets-aws'
import { dummyCredentialsInEnvironment } from './dummy-credentials.js'
import { startSecretsManagerStandIn } from './secrets-manager-stand-in.js'

// Against a local stand-in speaking Secrets Manager's JSON 1.1 protocol on 127.0.0.1, reached through
// the SDK's `endpoint` option. Credentials: static dummies in this test's environment only, picked
// up by the SDK's default chain (its environment step), as real ones would be.
const { accessKeyId, secretAccessKey } = dummyCredentialsInEnvironment()

void t.test('aws_secrets_manager passes the secret provider contract', async (t) => {
  const aws = await startSecretsManagerStandIn({ accessKeyId, secretAccessKey })
  t.teardown(() => aws.close())
  const down = await freePort()
  await secretProviderContract(t, () => awsSecretsManagerProvider(), {
    config: { endpoint: aws.endpoint, region: 'us-east-1', prefix: 'slaw/', kmsKeyId: 'alias/slaw', recoveryWindowInDays: 7, timeoutMs: 5_000 },
    brokenConfig: { endpoint: `http://127.0.0.1:${down}`, region: 'us-east-1', maxAttempts: 1 },
    // Secrets Manager deletes a secret with all its versions.
    deletesSingleVersions: false,
  })
  t.ok(aws.calls.length > 0 && aws.calls.every((c) => c.accessKeyId === accessKeyId), 'every call was signed (signature verified) with the credentials from the default chain')
})

void t.test('the wire: JSON 1.1 targets, versions as VersionIds, the KMS key and prefix on create, deletion window', async (t) => {
  const aws = await startSecretsManagerStandIn({ accessKeyId, secretAccessKey })
  t.teardown(() => aws.close())
  const provider = awsSecretsManagerProvider()
  t.teardown(() => provider.close?.())
  const config = { endpoint: aws.endpoint, prefix: 'team/', kmsKeyId: 'alias/team', recoveryWindowInDays: 0 }
  const one = await provider.store({ secretId: 'abc', version: 1, value: 'v-1', config })
  const two = await provider.store({ secretId: 'abc', version: 2, value: 'v-2', config })
  t.match(one.ref, /^arn:aws:secretsmanager:us-east-1:123456789012:secret:team\/abc-[0-9a-f]{6}\?versionId=[0-9a-f-]{36}$/, 'a ref is the ARN with the VersionId')
  t.same(
    aws.calls.map((c) => c.target),
    ['secretsmanager.CreateSecret', 'secretsmanager.PutSecretValue'],
    'created once, then a new version put',
  )
  t.match(aws.calls[0]!.body, { Name: 'team/abc', KmsKeyId: 'alias/team', Tags: [{ Key: 'slaw:secretId', Value: 'abc' }] })
  t.equal(await provider.resolve({ ref: one.ref, config }), 'v-1')
  t.equal(await provider.resolve({ ref: one.ref.split('?')[0]!, config }), 'v-2', 'the bare ARN reads AWSCURRENT')
  t.equal(await provider.resolve({ ref: `${one.ref.split('?')[0]}?versionStage=AWSPREVIOUS`, config }), 'v-1', 'a staging label')
  await provider.delete({ ref: two.ref, config })
  t.match(aws.calls.at(-1), { target: 'secretsmanager.DeleteSecret', body: { ForceDeleteWithoutRecovery: true } }, 'recoveryWindowInDays 0 deletes at once')
  await t.rejects(provider.resolve({ ref: one.ref, config }), { code: 'not_found' }, 'all versions are gone')
  // A concurrent first store: both callers land, as two versions of one secret.
  const [a, b] = await Promise.all([0, 1].map((i) => provider.store({ secretId: 'race', version: 1, value: `r-${i}`, config })))
  t.not(a!.ref, b!.ref, 'two refs')
  t.same([await provider.resolve({ ref: a!.ref, config }), await provider.resolve({ ref: b!.ref, config })], ['r-0', 'r-1'], 'each keeps its value')
})

void t.test('imported refs: a JSON key, listRemote by name prefix', async (t) => {
  const aws = await startSecretsManagerStandIn({ accessKeyId, secretAccessKey })
  t.teardown(() => aws.close())
  const provider = awsSecretsManagerProvider()
  t.teardown(() => provider.close?.())
  const config = { endpoint: aws.endpoint, prefix: '' }
  const { ref } = await provider.store({ secretId: 'prod/db', version: 1, value: JSON.stringify({ username: 'svc', password: 'pw-1' }), config })
  await provider.store({ secretId: 'prod/api', version: 1, value: 'k-1', config })
  await provider.store({ secretId: 'dev/db', version: 1, value: 'd-1', config })
  const arn = ref.split('?')[0]!
  t.equal(await provider.resolve({ ref: `${arn}?jsonKey=password`, config }), 'pw-1', 'one key of a JSON value')
  await t.rejects(provider.resolve({ ref: `${arn}?jsonKey=nope`, config }), { code: 'not_found', message: /no key nope/ })
  const first = await provider.listRemote!({ config, query: 'prod/', pageSize: 1 })
  t.equal(first.items.length, 1)
  t.ok(first.nextToken, 'a next page')
  const second = await provider.listRemote!({ config, query: 'prod/', pageSize: 1, nextToken: first.nextToken })
  t.same(
    [...first.items, ...second.items].map((i) => i.name),
    ['prod/db', 'prod/api'],
    'both prod secrets, one a page',
  )
  t.equal(second.nextToken, undefined, 'and no further page')
  t.match(aws.calls.at(-1)!.body, { Filters: [{ Key: 'name', Values: ['prod/'] }], MaxResults: 1 }, 'the name filter and page size go to AWS')
  const calls = aws.calls.length
  t.same(await provider.listRemote!({ config, query: '!prod', pageSize: 10 }), { items: [] }, 'a query no name can hold matches nothing (no negation by a leading !)')
  t.equal(aws.calls.length, calls, 'without asking AWS')
})

void t.test('faults: a hanging endpoint times out, 403 is access_denied, a closed port is unavailable; no value in any message', async (t) => {
  const aws = await startSecretsManagerStandIn({ accessKeyId, secretAccessKey })
  t.teardown(() => aws.close())
  const provider = awsSecretsManagerProvider()
  t.teardown(() => provider.close?.())
  const config = { endpoint: aws.endpoint, timeoutMs: 300 }
  const value = 'fault-value-9c2e'
  const { ref } = await provider.store({ secretId: 'fault', version: 1, value, config })

  const downConfig = { endpoint: `http://127.0.0.1:${await freePort()}`, maxAttempts: 1 }
  const messages = {
    hanging: /no answer from http:\/\/127\.0\.0\.1:\d+ within 300 ms/,
    forbidden: /access denied \(AccessDeniedException, HTTP 403\)/,
    down: /cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
  }
  await expectProviderFaults(t, provider, { backend: aws, config, downConfig, ref, value, messages })

  // Credentials the backend refuses.
  const stranger = awsSecretsManagerProvider({ clientConfig: { credentials: { accessKeyId: 'AKIAOTHER00000000000', secretAccessKey: 'x' } } })
  t.teardown(() => stranger.close?.())
  await expectSecretProviderError(t, () => stranger.resolve({ ref, config }), { what: 'unknown credentials', code: 'access_denied', message: /UnrecognizedClientException/, value })
  const forger = awsSecretsManagerProvider({ clientConfig: { credentials: { accessKeyId, secretAccessKey: 'not-the-secret-access-key' } } })
  t.teardown(() => forger.close?.())
  await expectSecretProviderError(t, () => forger.resolve({ ref, config }), { what: 'a wrong secret access key', code: 'access_denied', message: /InvalidSignatureException/, value })
})

void t.test('bad config is invalid_config, never a crash', async (t) => {
  const provider = awsSecretsManagerProvider()
  for (const [config, pattern] of [
    [{ endpoint: 'nope' }, /http\(s\) URL/],
    [{ recoveryWindowInDays: 3 }, /0 \(delete at once\) or 7 to 30/],
    [{ accessKeyId: 'AKIA' }, /unknown config keys accessKeyId/],
    [{ prefix: 'bad prefix?' }, /prefix may hold only/],
  ] as const) {
    await t.rejects(provider.resolve({ ref: 'a', config }), { name: 'SecretProviderError', code: 'invalid_config', message: pattern })
  }
  t.match(await provider.health({ endpoint: 'nope' }), { ok: false, message: /http\(s\) URL/ })
})
