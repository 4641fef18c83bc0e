import type { EnvBinding } from '../secrets/env-bindings.js'
import { envNamePattern } from '../secrets/binding-usage.js'

/**
 * The one rule for an agent's process environment (docs/security.md, "What reaches an agent's
 * process"). Every source — the agent's adapterConfig.env, a routine's env, the wake variables —
 * goes through `composeAgentEnv`, which knows who wrote each part:
 *
 * 1. `wake`: the run engine's SVC_* variables. They win over everything.
 * 2. `agent_config`: the agent's adapterConfig.env. Only an Operator writes it, for this agent, so
 *    it may set any name but SVC_* (names that load code included) and bind secrets.
 * 3. `routine_operator`: a routine env an Operator wrote, reaching the assignee an Operator chose.
 *    May load code and bind secrets; never overrides the agent's own configuration.
 * 4. `routine_agent`: a routine env an agent wrote. Never a name that loads code, never a secret,
 *    never overriding anything above it.
 *
 * The same checks refuse such writes with 400 where the writer is known (routines.ts); applying
 * them again here holds the rule for data written before it existed, or by another path.
 */

type EnvSource = 'wake' | 'agent_config' | 'routine_operator' | 'routine_agent'

/** Higher wins: a less trusted source never overrides a more trusted one. */
const trust: Record<EnvSource, number> = { wake: 4, agent_config: 3, routine_operator: 2, routine_agent: 1 }

/**
 * Names that make a program load or run other code, change where it looks for programs, libraries
 * or configuration, or send its traffic (and the credentials in it) elsewhere. Compared in upper
 * case: Windows treats env names case-insensitively, and `Path` there is `PATH`.
 */
const codeLoadingNames = new Set([
  'PATH',
  'BASH_ENV',
  'ENV',
  'SHELL',
  'SHELLOPTS',
  'BASHOPTS',
  'PS4',
  'PROMPT_COMMAND',
  'IFS',
  'CDPATH',
  'HOME',
  'ZDOTDIR',
  'TMPDIR',
  'RUBYOPT',
  'RUBYLIB',
  'GEM_HOME',
  'GEM_PATH',
  'BUNDLE_GEMFILE',
  'CLASSPATH',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'DOTNET_STARTUP_HOOKS',
  'LUA_PATH',
  'LUA_CPATH',
  'LUA_INIT',
  'GCONV_PATH',
  'GLIBC_TUNABLES',
  'LOCPATH',
  'HOSTALIASES',
  'RES_OPTIONS',
  'LOCALDOMAIN',
  'EDITOR',
  'VISUAL',
  'PAGER',
  'MANPAGER',
  'BROWSER',
  'SSH_ASKPASS',
  'SUDO_ASKPASS',
  'SSH_AUTH_SOCK',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'ALL_PROXY',
  'NO_PROXY',
  'FTP_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'OPENSSL_CONF',
  'OPENSSL_ENGINES',
  'XDG_CONFIG_HOME',
  'XDG_CONFIG_DIRS',
  'XDG_DATA_HOME',
  'XDG_DATA_DIRS',
  'PROMPT',
  'COMSPEC',
  'PATHEXT',
])
const codeLoadingPrefixes = [
  'LD_',
  'DYLD_',
  'PYTHON',
  'PERL',
  'GIT_',
  'SVC_',
  'NODE_',
  'NPM_CONFIG_',
  'YARN_',
  'PNPM_',
  'BUN_',
  'DENO_',
  'PIP_',
  'UV_',
  'CONDA_',
  'CORECLR_',
  'COR_',
  'COMPLUS_',
  'DOTNET_',
  'MALLOC_',
  'CARGO_',
  'RUSTC',
  'MAVEN_',
  'GRADLE_',
  'JAVA_',
  'BUNDLE_',
  'COMPOSER_',
]
const codeLoadingExact = ['RUSTFLAGS', 'RUSTDOCFLAGS', 'GOFLAGS', 'GOPATH', 'GOROOT', 'GOPROXY', 'GOTOOLCHAIN', 'GOENV', 'CC', 'CXX', 'CFLAGS', 'CXXFLAGS', 'LDFLAGS', 'CPPFLAGS', 'MAKEFLAGS']
for (const n of codeLoadingExact) codeLoadingNames.add(n)
/** Common names under a refused prefix that change no code path. */
const harmless = new Set(['NODE_ENV'])

/** Why only an Operator may set `name` for an agent (it loads code or redirects the process), or undefined. */
export function codeLoadingReason(name: string): string | undefined {
  const upper = name.toUpperCase()
  if (upper.startsWith('SVC_')) return 'SVC_ names are the wake variables'
  if (harmless.has(upper)) return undefined
  if (codeLoadingNames.has(upper) || codeLoadingPrefixes.some((p) => upper.startsWith(p))) {
    return 'it can make the agent load or run other code, or send its traffic elsewhere'
  }
  return undefined
}

export interface EnvPart {
  source: EnvSource
  bindings: Record<string, EnvBinding>
  /** Where the bindings live, for messages and secret access events (`adapterConfig.env`, `routine.env`). */
  path: string
}

export interface PlannedBinding {
  name: string
  binding: EnvBinding
  source: EnvSource
  configPath: string
}

export interface RefusedBinding {
  name: string
  source: EnvSource
  reason: string
}

/**
 * Which binding each name of the process gets, and which bindings were refused and why. Pure: the
 * run engine resolves the planned bindings (secrets) afterwards.
 */
export function composeAgentEnv(parts: EnvPart[]): { planned: PlannedBinding[]; refused: RefusedBinding[] } {
  const chosen = new Map<string, PlannedBinding>()
  const refused: RefusedBinding[] = []
  // Most trusted first: a name it sets is taken, and a less trusted source asking for it is refused.
  const ordered = [...parts].sort((a, b) => trust[b.source] - trust[a.source])
  for (const part of ordered) {
    for (const [name, binding] of Object.entries(part.bindings)) {
      const reason = refusal(part.source, name, binding)
      if (reason) {
        refused.push({ name, source: part.source, reason })
        continue
      }
      const taken = chosen.get(name)
      if (taken) {
        if (taken.source !== part.source) refused.push({ name, source: part.source, reason: `${describe(taken.source)} sets it` })
        continue
      }
      chosen.set(name, { name, binding, source: part.source, configPath: `${part.path}.${name}` })
    }
  }
  return { planned: [...chosen.values()], refused }
}

function refusal(source: EnvSource, name: string, binding: EnvBinding): string | undefined {
  if (source === 'wake') return undefined
  if (!envNamePattern.test(name)) return 'not an environment variable name'
  if (name.toUpperCase().startsWith('SVC_')) return 'SVC_ names are the wake variables'
  if (source === 'routine_agent') {
    const why = codeLoadingReason(name)
    if (why) return `only an Operator may set it: ${why}`
    if (typeof binding === 'object' && binding !== null && binding.type === 'secret_ref') return 'only an Operator may bind a secret'
  }
  return undefined
}

function describe(source: EnvSource): string {
  switch (source) {
    case 'wake':
      return 'the run engine'
    case 'agent_config':
      return "the agent's own configuration"
    case 'routine_operator':
      return "the routine's Operator-written env"
    case 'routine_agent':
      return "the routine's env"
  }
}
