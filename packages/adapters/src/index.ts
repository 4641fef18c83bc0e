export { processAdapter, type ProcessAdapterOptions } from './process-adapter.js'
export { httpAdapter, type HttpAdapterOptions } from './http-adapter.js'
