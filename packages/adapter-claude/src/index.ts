export { claudeAdapter, claudeConfigSchema, type ClaudeAdapterOptions, type ClaudeAgentConfig } from './claude-adapter.js'
export { ClaudeStream } from './claude-stream.js'
