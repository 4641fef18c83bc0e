import t from 'tap'
import { memoryLocks } from '@slaw/core'
import { lockContract } from '@slaw/core/testing'

// In-process locks: one node only, and a lock expires ttlMs after it was taken even while fn runs.
void lockContract(t, (settings) => memoryLocks(settings), {
  sharedAcrossInstances: false,
  extendsWhileRunning: false,
})
