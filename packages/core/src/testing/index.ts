// Contract test kits: what a third-party implementation of a slaw contract runs to prove itself.
export type { ContractMessage, ContractTest, ContractTestOptions } from './contract-test.js'
export { lockContract } from './lock-contract.js'
export type { LockContractOptions, LockContractSettings, MakeLocks } from './lock-contract.js'
export { storageContract } from './storage-contract.js'
export type { MakeStorage, StorageContractOptions } from './storage-contract.js'
export { secretProviderContract } from './secret-provider-contract.js'
export type { MakeSecretProvider, SecretProviderContractOptions } from './secret-provider-contract.js'
