"""Sign a statement with //Alice, submit it to a statement-node and read it back, with
substrate-interface.

    python submit.py [url] [node-signed]

url: ws://... or http://...; default ws://127.0.0.1:9944.
node-signed: optional, the output of
    statement-node sign --topic statement-store-example --data reference --sequence 7
checked against this script's own encoding of the same inputs (same bytes, and its signature
verifies over this script's signature material).

Exits 0 only if the submitted data comes back from statement_broadcasts.
"""

import hashlib
import secrets
import sys
import time

from substrateinterface import Keypair, SubstrateInterface
from substrateinterface.exceptions import SubstrateRequestException

# The statement wire format (docs/DESIGN.md, upstream sp-statement-store), in
# py-scale-codec's type registry format: a Vec of fields, each tagged by its index here.
STATEMENT_TYPES = {
    "types": {
        "Statement": "Vec<StatementField>",
        "StatementField": {
            "type": "enum",
            "type_mapping": [
                ["AuthenticityProof", "StatementProof"],
                ["DecryptionKey", "[u8; 32]"],
                ["Expiry", "u64"],
                ["Channel", "[u8; 32]"],
                ["Topic1", "[u8; 32]"],
                ["Topic2", "[u8; 32]"],
                ["Topic3", "[u8; 32]"],
                ["Topic4", "[u8; 32]"],
                ["Data", "Bytes"],
            ],
        },
        "StatementProof": {
            "type": "enum",
            "type_mapping": [
                ["Sr25519", "StatementSignature"],
                ["Ed25519", "StatementSignature"],
                ["Secp256k1Ecdsa", "StatementEcdsaSignature"],
            ],
        },
        "StatementSignature": {
            "type": "struct",
            "type_mapping": [["signature", "[u8; 64]"], ["signer", "[u8; 32]"]],
        },
        "StatementEcdsaSignature": {
            "type": "struct",
            "type_mapping": [["signature", "[u8; 65]"], ["signer", "[u8; 33]"]],
        },
    }
}

# The inputs `statement-node sign` is given for the reference statement.
REFERENCE_TOPIC = "statement-store-example"
REFERENCE_DATA = "reference"
REFERENCE_SEQUENCE = 7


def topic_of(text: str) -> bytes:
    """A topic, as `statement-node sign` makes one from text: blake2-256 of its bytes."""
    return hashlib.blake2b(text.encode(), digest_size=32).digest()


def expiry_of(secs: int, sequence: int) -> int:
    """Expiry: high 32 bits unix seconds, low 32 bits a sequence number."""
    return (secs << 32) | sequence


def unsigned_fields(expiry: int, topics: list, data: bytes) -> list:
    """The unsigned fields, in increasing tag order as the wire format requires."""
    fields = [{"Expiry": expiry}]
    fields += [{f"Topic{i + 1}": "0x" + topic.hex()} for i, topic in enumerate(topics)]
    fields.append({"Data": "0x" + data.hex()})
    return fields


def encode(substrate: SubstrateInterface, type_string: str, value) -> bytes:
    obj = substrate.create_scale_object(type_string)
    return bytes(obj.encode(value).data)


def signature_material(substrate: SubstrateInterface, fields: list) -> bytes:
    """What the proof signs: each field's encoding, without the count prefix and the proof."""
    return b"".join(encode(substrate, "StatementField", field) for field in fields)


def signed(substrate: SubstrateInterface, keypair: Keypair, fields: list) -> bytes:
    """The statement, encoded, with an sr25519 proof by `keypair` first."""
    signature = keypair.sign(signature_material(substrate, fields))
    proof = {
        "AuthenticityProof": {
            "Sr25519": {"signature": "0x" + signature.hex(), "signer": "0x" + keypair.public_key.hex()}
        }
    }
    return encode(substrate, "Statement", [proof] + fields)


def check_against_node(substrate: SubstrateInterface, keypair: Keypair, node_hex: str) -> None:
    """Check a statement signed by `statement-node sign` against this script's encoding."""
    node_bytes = bytes.fromhex(node_hex.removeprefix("0x"))
    decoded = substrate.decode_scale("Statement", "0x" + node_bytes.hex())
    proof = decoded[0]["AuthenticityProof"]["Sr25519"]
    expiry = next(field["Expiry"] for field in decoded if "Expiry" in field)
    ours = unsigned_fields(expiry, [topic_of(REFERENCE_TOPIC)], REFERENCE_DATA.encode())
    material = signature_material(substrate, ours)
    # The node's own bytes after the field count (one byte for so few fields) and the proof.
    proof_length = len(encode(substrate, "StatementField", decoded[0]))
    theirs = node_bytes[1 + proof_length :]
    if material != theirs:
        raise SystemExit(f"unsigned fields differ:\n ours 0x{material.hex()}\n node 0x{theirs.hex()}")
    if bytes.fromhex(proof["signer"].removeprefix("0x")) != keypair.public_key:
        raise SystemExit("the node-signed statement is not signed by //Alice")
    if not keypair.verify(material, bytes.fromhex(proof["signature"].removeprefix("0x"))):
        raise SystemExit("the node's signature does not verify over this script's signature material")
    if expiry & 0xFFFF_FFFF != REFERENCE_SEQUENCE:
        raise SystemExit(f"expiry {expiry} does not carry sequence {REFERENCE_SEQUENCE}")
    if encode(substrate, "Statement", decoded) != node_bytes:
        raise SystemExit("the node-signed statement does not re-encode to the same bytes")
    print("node-signed reference: same unsigned bytes, signature verifies")


def rpc(substrate: SubstrateInterface, method: str, params: list):
    response = substrate.rpc_request(method, params)
    if "error" in response:
        raise SubstrateRequestException(f"{method}: {response['error']}")
    return response["result"]


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:9944"
    node_signed = sys.argv[2] if len(sys.argv) > 2 else None
    substrate = SubstrateInterface(url=url, type_registry=STATEMENT_TYPES)
    substrate.init_runtime()
    print(
        f"connected to {substrate.chain} (runtime {substrate.runtime_version}, "
        f"block {substrate.get_block_number(None)}, genesis {substrate.get_block_hash(0)}) "
        f"over {url}"
    )
    print(f"system_properties: {substrate.properties}")

    alice = Keypair.create_from_uri("//Alice")
    if node_signed:
        check_against_node(substrate, alice, node_signed)

    topic = topic_of("statement-store-example")
    text = f"hello from substrate-interface {secrets.token_hex(8)}"
    expiry = expiry_of(int(time.time()) + 3600, 0)
    statement = signed(substrate, alice, unsigned_fields(expiry, [topic], text.encode()))
    result = rpc(substrate, "statement_submit", ["0x" + statement.hex()])
    print(f"statement_submit: {result}")
    if result.get("status") != "new":
        raise SystemExit(f"submission not stored: {result}")

    found = rpc(substrate, "statement_broadcasts", [["0x" + topic.hex()]])
    texts = [bytes.fromhex(data.removeprefix("0x")).decode(errors="replace") for data in found]
    print(f"statement_broadcasts: {len(texts)} statement(s) on the topic")
    substrate.close()
    if text not in texts:
        raise SystemExit(f"{text!r} did not come back: {texts}")
    print(f"read back: {text!r}")


if __name__ == "__main__":
    main()
