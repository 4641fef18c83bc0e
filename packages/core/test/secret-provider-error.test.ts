import t from 'tap'
import { SecretProviderError } from '@slaw/core'
import * as providerKit from '@slaw/core/secret-provider'

// The bundled `slaw` command carries its own core; a provider plugin installed next to it throws
// the SecretProviderError of its own copy. slaw must still recognise it.
t.test('a SecretProviderError from another copy of core is one', async (t) => {
  const url = new URL('../src/contracts/secret-provider.js', import.meta.url)
  const other = (await import(`${url.href}?copy=2`)) as typeof import('../src/contracts/secret-provider.js')
  t.not(other.SecretProviderError, SecretProviderError, 'a second copy of the module, with its own class')
  const foreign = new other.SecretProviderError('not_found', 'no such secret')
  t.ok(foreign instanceof SecretProviderError, 'theirs is ours')
  t.ok(new SecretProviderError('timeout', 'slow') instanceof other.SecretProviderError, 'ours is theirs')
})

t.test('the brand widens nothing else', async (t) => {
  class TimeoutFailure extends SecretProviderError {}
  t.notOk(new Error('plain') instanceof SecretProviderError, 'a plain Error is not one')
  for (const value of [null, undefined, 'not_found', 1, {}]) t.notOk((value as unknown) instanceof SecretProviderError, `${String(value)} is not one`)
  t.ok(new TimeoutFailure('timeout', 'slow') instanceof TimeoutFailure, 'a subclass recognises its own')
  t.notOk(new SecretProviderError('timeout', 'slow') instanceof TimeoutFailure, 'a subclass does not take its base class')
})

t.test('@slaw/core/secret-provider is the same core as @slaw/core', async (t) => {
  t.equal(providerKit.SecretProviderError, SecretProviderError)
  t.type(providerKit.readProviderConfig, 'function')
  t.type(providerKit.endpointAllowed, 'function')
})
