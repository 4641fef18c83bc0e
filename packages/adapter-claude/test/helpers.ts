import { cliStandIn } from '../../adapters/test/cli-stand-in.js'

export const { standIn, fixturesDir, scratch, calls, wakeInput } = cliStandIn(new URL('./fixtures', import.meta.url), 'claude')
