export { codexAdapter, codexConfigSchema, type CodexAdapterOptions, type CodexAgentConfig } from './codex-adapter.js'
export { CodexStream, type CodexPriceTable } from './codex-stream.js'
