import { cliStandIn } from '../../adapters/test/cli-stand-in.js'

export const { standIn, fixturesDir, scratch, calls, wakeInput, processGone } = cliStandIn(new URL('./fixtures', import.meta.url), 'claude')
