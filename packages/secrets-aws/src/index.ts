// @slaw/secrets-aws: secret values in AWS Secrets Manager, for slaw's `aws_secrets_manager` provider type.
export { awsSecretsManagerProvider, awsConfigKeys } from './aws-provider.js'
export type { AwsSecretsManagerProviderOptions } from './aws-provider.js'
export { parseRef as parseAwsRef, formatRef as formatAwsRef } from './refs.js'
export type { AwsRef } from './refs.js'
