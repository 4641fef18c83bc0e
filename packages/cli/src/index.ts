export { runCli } from './cli.js'
export { readStartConfig, towerClientOptions, ConfigError, type StartConfig } from './config.js'
export { startInstance } from './start.js'
export { secretsCommand, masterKeyFile } from './secrets.js'
