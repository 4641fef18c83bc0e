/**
 * Puts static dummy credentials in this test process's environment, and only there, so the SDK's
 * default chain (its environment step) picks them up as it would real ones; the chain's other
 * steps (shared files, profiles, instance metadata) are closed off. Answers the credentials, for
 * the stand-in to verify signatures with.
 */
export function dummyCredentialsInEnvironment(): { accessKeyId: string; secretAccessKey: string } {
  const accessKeyId = 'AKIASTANDIN000000000'
  const secretAccessKey = 'stand-in-dummy-secret-access-key-0000000'
  Object.assign(process.env, {
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
    AWS_REGION: 'us-east-1',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/nonexistent/aws-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    // The stand-ins listen on 127.0.0.1 at random ports: this node allows that host.
    SVC_AWS_ALLOWED_ENDPOINTS: '127.0.0.1',
  })
  delete process.env.AWS_SESSION_TOKEN
  delete process.env.AWS_PROFILE
  return { accessKeyId, secretAccessKey }
}
