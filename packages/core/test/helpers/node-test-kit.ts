// Run with `node --test`: the secret-provider kit under node:test, as a provider author on that runner
// would write it. SLAW_KIT_FAULT=leak makes the provider quote part of a deleted value in its error.
import { test } from 'node:test'
import { MasterKey, SecretProviderError, localEncryptedProvider, type SecretProvider } from '@slaw/core'
import { nodeTestContract, secretProviderContract } from '@slaw/core/testing'

const key = MasterKey.generate()
const elsewhere = key.encrypt('sealed to another secret', 'slaw-secret:00000000-0000-0000-0000-000000000000:1')

function provider(): SecretProvider {
  const inner = localEncryptedProvider(() => key)
  if (process.env.SLAW_KIT_FAULT !== 'leak') return inner
  return {
    ...inner,
    async resolve(input) {
      try {
        return await inner.resolve(input)
      } catch (error) {
        throw new SecretProviderError('not_found', `no such value (ref began ${input.ref.slice(0, 12)}; ${String(error)})`)
      }
    },
    async store(input) {
      if (input.value.length > 20) throw new SecretProviderError('unavailable', `refused ${input.value.slice(4, 16)}`)
      return inner.store(input)
    },
  }
}

test('local_encrypted keeps the secret provider contract under node:test', (t) =>
  secretProviderContract(nodeTestContract(t), provider, { valueInRef: true, emptyValues: true, unknownRefs: [elsewhere] }))
