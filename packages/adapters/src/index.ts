export { processAdapter, type ProcessAdapterOptions, type ProcessAgentConfig } from './process-adapter.js'
export { httpAdapter, type HttpAdapterOptions, type HttpAgentConfig, type HttpWakeBody } from './http-adapter.js'
export { signatureHeader, verifyWakeSignature, wakeSignature } from './signature.js'
