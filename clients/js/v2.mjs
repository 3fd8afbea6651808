// The spec-v2 statement API (`statement_unstable_*`) from an app: subscribe, add a filter,
// submit through the new API, and read the events, with @polkadot/api's WsProvider.
//
//   node v2.mjs <ws-url> <signed statement hex> <topic hex>
//
// The statement (from `statement-node sign --topic <name> ...`) must carry the topic. Exits 0
// only if: the filter's replay ends before anything else comes, the submit answers
// {"status": "new"} and then {"status": "known"}, and the statement comes once in a
// `newStatements` event that names the filter.

import { WsProvider } from '@polkadot/api';

const [url, statement, topic] = process.argv.slice(2);
if (!url || !statement || !topic) {
	console.error('usage: node v2.mjs <ws-url> <signed statement hex> <topic hex>');
	process.exit(2);
}

const provider = new WsProvider(url);
await provider.isReady;

const events = [];
let wake = () => {};
const next = async (what) => {
	const deadline = Date.now() + 60_000;
	while (events.length === 0) {
		if (Date.now() > deadline) throw new Error(`no event within 60 s, waiting for ${what}`);
		await new Promise((resolve) => {
			wake = resolve;
			setTimeout(resolve, 1_000);
		});
	}
	return events.shift();
};

// The subscription: events arrive as statement_unstable_subscribeEvent notifications.
const subscription = await provider.subscribe(
	'statement_unstable_subscribeEvent',
	'statement_unstable_subscribe',
	[],
	(error, event) => {
		if (error) {
			console.error('subscription error:', error);
			process.exit(1);
		}
		events.push(event);
		wake();
	},
);
console.log(`subscribed: ${subscription}`);

const filterId = await provider.send('statement_unstable_add_filter', [
	subscription,
	{ matchAll: [topic] },
]);
console.log(`filter ${JSON.stringify(filterId)} added`);
if (typeof filterId !== 'string') throw new Error(`add_filter answered ${JSON.stringify(filterId)}`);

// Nothing is stored on this topic yet: the replay is done at once.
const done = await next('replayDone');
if (done.event !== 'replayDone' || done.filterId !== filterId) {
	throw new Error(`expected replayDone for ${filterId}, got ${JSON.stringify(done)}`);
}

const outcome = await provider.send('statement_unstable_submit', [statement]);
if (outcome.status !== 'new') throw new Error(`submit answered ${JSON.stringify(outcome)}`);
const again = await provider.send('statement_unstable_submit', [statement]);
if (again.status !== 'known') throw new Error(`a second submit answered ${JSON.stringify(again)}`);

const news = await next('newStatements');
if (news.event !== 'newStatements') throw new Error(`expected newStatements, got ${JSON.stringify(news)}`);
const entries = news.statements.filter((entry) => entry.statement === statement);
if (entries.length !== 1 || !entries[0].filterIds.includes(filterId)) {
	throw new Error(`the statement did not come once under filter ${filterId}: ${JSON.stringify(news)}`);
}
console.log(`the statement came once, under filter ${filterId}`);

await provider.send('statement_unstable_remove_filter', [subscription, filterId]);
await provider.unsubscribe('statement_unstable_subscribeEvent', 'statement_unstable_unsubscribe', subscription);
await provider.disconnect();
process.exit(0);
