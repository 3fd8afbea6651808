// Sign a statement with //Alice, submit it to a statement-node and read it back, with
// @polkadot/api and the RPC definitions in ../polkadot-js.
//
//   node submit.mjs [url] [node-signed]
//
// url: ws://... (WsProvider) or http://... (HttpProvider); default ws://127.0.0.1:9944.
// node-signed: optional, the output of
//   statement-node sign --topic statement-store-example --data reference --sequence 7
// checked against this script's own encoding of the same inputs (same bytes, and its
// signature verifies over this script's signature material).
//
// Exits 0 only if the submitted data comes back from statement_broadcasts.

import { ApiPromise, HttpProvider, WsProvider } from '@polkadot/api';
import { Keyring } from '@polkadot/keyring';
import { hexToU8a, stringToU8a, u8aConcat, u8aEq, u8aToHex, u8aToString } from '@polkadot/util';
import { blake2AsU8a, cryptoWaitReady, randomAsHex, signatureVerify } from '@polkadot/util-crypto';
import { readFileSync } from 'node:fs';

const definitions = (name) =>
	JSON.parse(readFileSync(new URL(`../polkadot-js/${name}`, import.meta.url), 'utf8'));

/** The inputs `statement-node sign` is given for the reference statement. */
const REFERENCE = { topic: 'statement-store-example', data: 'reference', sequence: 7 };

/** A topic, as `statement-node sign` makes one from text: blake2-256 of its bytes. */
const topicOf = (text) => blake2AsU8a(stringToU8a(text), 256);

/** Expiry: high 32 bits unix seconds, low 32 bits a sequence number. */
const expiryOf = (secs, sequence) => (BigInt(secs) << 32n) | BigInt(sequence);

/** The unsigned fields, in increasing tag order as the wire format requires. */
function unsignedFields(expiry, topics, data) {
	const fields = [{ Expiry: expiry }];
	topics.forEach((topic, index) => fields.push({ [`Topic${index + 1}`]: topic }));
	// As hex: polkadot-js reads a Uint8Array given for `Bytes` as already length-prefixed.
	fields.push({ Data: u8aToHex(data) });
	return fields;
}

/** What the proof signs: each field's encoding, without the count prefix and the proof. */
const signatureMaterial = (api, fields) =>
	u8aConcat(...fields.map((field) => api.createType('StatementField', field).toU8a()));

/** The statement, encoded, with an sr25519 proof by `pair` first. */
function signed(api, pair, fields) {
	const signature = pair.sign(signatureMaterial(api, fields));
	const proof = { AuthenticityProof: { Sr25519: { signature, signer: pair.publicKey } } };
	return api.createType('Statement', [proof, ...fields]);
}

/** Check a statement signed by `statement-node sign` against this script's encoding. */
function checkAgainstNode(api, pair, hex) {
	const bytes = hexToU8a(hex);
	const fromNode = api.createType('Statement', bytes);
	const [first, ...rest] = fromNode;
	if (!first.isAuthenticityProof || !first.asAuthenticityProof.isSr25519) {
		throw new Error('the node-signed statement does not start with an sr25519 proof');
	}
	const proof = first.asAuthenticityProof.asSr25519;
	const expiry = rest.find((field) => field.isExpiry).asExpiry.toBigInt();
	const ours = unsignedFields(expiry, [topicOf(REFERENCE.topic)], stringToU8a(REFERENCE.data));
	const material = signatureMaterial(api, ours);
	// The node's own bytes after the field count (one byte for so few fields) and the proof.
	const theirs = bytes.subarray(1 + first.toU8a().length);
	if (!u8aEq(material, theirs)) {
		throw new Error(`unsigned fields differ:\n ours ${u8aToHex(material)}\n node ${u8aToHex(theirs)}`);
	}
	if (!u8aEq(proof.signer, pair.publicKey)) {
		throw new Error('the node-signed statement is not signed by //Alice');
	}
	if (!signatureVerify(material, proof.signature, proof.signer).isValid) {
		throw new Error("the node's signature does not verify over this script's signature material");
	}
	if (expiry % (1n << 32n) !== BigInt(REFERENCE.sequence)) {
		throw new Error(`expiry ${expiry} does not carry sequence ${REFERENCE.sequence}`);
	}
	// Whole statement, proof included, re-encoded: byte for byte what the node wrote.
	if (fromNode.toHex() !== hex) {
		throw new Error('the node-signed statement does not re-encode to the same bytes');
	}
	console.log('node-signed reference: same unsigned bytes, signature verifies');
}

async function main() {
	const [url = 'ws://127.0.0.1:9944', nodeSigned] = process.argv.slice(2);
	const provider = url.startsWith('http') ? new HttpProvider(url) : new WsProvider(url);
	// The RPC definitions are all the API needs; results come back as JSON (`Json`), as the
	// node writes them.
	const api = await ApiPromise.create({
		provider,
		rpc: definitions('definitions.json'),
		throwOnConnect: true,
	});
	// The statement's wire format, to encode and sign statements with `api.createType`.
	api.registry.register(definitions('types.json'));
	console.log(
		`connected to ${api.runtimeVersion.specName} (genesis ${api.genesisHash.toHex()}) over ${url}`,
	);
	const properties = await api.rpc.system.properties();
	console.log(`system_properties: ${JSON.stringify(properties.toHuman())}`);

	await cryptoWaitReady();
	const alice = new Keyring({ type: 'sr25519' }).addFromUri('//Alice');
	if (nodeSigned) {
		checkAgainstNode(api, alice, nodeSigned);
	}

	const topic = topicOf('statement-store-example');
	const text = `hello from polkadot-js ${randomAsHex(8)}`;
	const expiry = expiryOf(Math.floor(Date.now() / 1000) + 3600, 0);
	const statement = signed(api, alice, unsignedFields(expiry, [topic], stringToU8a(text)));
	const result = (await api.rpc.statement.submit(statement.toHex())).toJSON();
	console.log(`statement_submit: ${JSON.stringify(result)}`);
	if (result.status !== 'new') {
		throw new Error(`submission not stored: ${JSON.stringify(result)}`);
	}

	const found = await api.rpc.statement.broadcasts([topic]);
	const texts = found.map((data) => u8aToString(data));
	console.log(`statement_broadcasts: ${texts.length} statement(s) on the topic`);
	await api.disconnect();
	if (!texts.includes(text)) {
		throw new Error(`"${text}" did not come back: ${JSON.stringify(texts)}`);
	}
	console.log(`read back: "${text}"`);
}

// Without the node's chain methods ApiPromise.create never settles: fail instead of hanging.
const deadline = setTimeout(() => {
	console.error('timed out: the API did not connect and finish within 60 s');
	process.exit(1);
}, 60_000);
main().then(
	() => {
		clearTimeout(deadline);
		process.exit(0);
	},
	(err) => {
		console.error(`FAILED: ${err.message}`);
		process.exit(1);
	},
);
