// Connect the apps' library (@novasamatech/statement-store 0.5.4; its newer releases depend on
// packages the registry does not have) to a statement-node through polkadot-api's client,
// read statements by topic, and check that the client settles: that it follows the
// (genesis-only) chain without retrying.
//
//   node follow.mjs [ws-url] [seconds]
//
// ws-url: default ws://127.0.0.1:9944; seconds: how long to watch the client, default 3.
//
// polkadot-api follows the chain on a node without chainHead_v1 by emulating it with the
// legacy methods, and reads `:code`'s hash with state_getStorageHash. Where a method it needs
// is missing, it logs "ChainHead subfollow request failed, retrying..." and tries again every
// 250 ms, for ever. Exits 0 only if the query and the library's subscription answer and no
// such retry was logged.
//
// The library reads through the client's raw requests (`client._request`), which is all a
// statement node can serve: it runs no runtime, so `:code` is absent and polkadot-api's typed
// API (and `client.getFinalizedBlock()`, which builds a runtime for the block) has nothing to
// work with.

import { createPapiStatementStoreAdapter } from '@novasamatech/statement-store';
import { createWsClient } from 'polkadot-api/ws';
// Node 20 has no WebSocket built in.
import { WebSocket } from 'ws';

const url = process.argv[2] ?? 'ws://127.0.0.1:9944';
const seconds = Number(process.argv[3] ?? 3);

const retries = [];
const warn = console.warn;
console.warn = (...args) => {
	const text = args.map(String).join(' ');
	if (text.includes('retrying')) retries.push(text);
	warn(...args);
};

// The library's own `createLazyClient` would bring polkadot-api 1, which needs chainHead_v1; the
// apps run it on the current polkadot-api, whose client the adapter is given here.
const client = createWsClient(url, { websocketClass: WebSocket });
const lazy = { getClient: () => client, disconnect: () => client.destroy() };
const adapter = createPapiStatementStoreAdapter(lazy);

/** Rejects after `ms`: a hang detector. */
const timeout = (ms, what) =>
	new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} after ${ms} ms`)), ms));

try {
	const topic = new Uint8Array(32).fill(0x5a);
	const answer = await Promise.race([adapter.queryStatements([topic]), timeout(30_000, 'answer')]);
	if (answer.isErr()) throw new Error(`query failed: ${answer.error}`);
	console.log(`statements on the topic: ${answer.value.length}`);
	// The library's subscription: it polls the query every 1.5 s.
	let polls = 0;
	const unsubscribe = adapter.subscribeStatements([topic], () => polls++);
	await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
	unsubscribe();
	if (polls === 0) throw new Error(`the library's subscription got no answer in ${seconds} s`);
	if (retries.length > 0) {
		throw new Error(`the client retried ${retries.length} times in ${seconds} s; first: ${retries[0]}`);
	}
	console.log(`the client settled: no retries in ${seconds} s; ${polls} answers to the subscription`);
	lazy.disconnect();
	process.exit(0);
} catch (err) {
	console.error(`FAILED: ${err.stack ?? err.message}`);
	lazy.disconnect();
	process.exit(1);
}
