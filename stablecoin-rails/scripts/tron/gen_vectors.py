"""Golden vectors for the TRON rail, built and signed offline by tronpy.

    python3 -m venv /tmp/tronpy-venv
    /tmp/tronpy-venv/bin/pip install 'tronpy[offline]==0.6.2'
    /tmp/tronpy-venv/bin/python scripts/tron/gen_vectors.py \
        > tests/fixtures/tron/tronpy_vectors.json

Reads tests/fixtures/tron/inputs.json. TRX and TRC-20 transfers go through tronpy's own
offline builder (``TransactionBuilder.build(offline=True)``, ABI encoding by tronpy's
``Contract``). tronpy's offline serializer knows only those two contract types, so
DelegateResource, UnDelegateResource and AccountCreate are serialized with tronpy's
bundled protobuf module (``tronpy.proto.tron_pb2``: Transaction.raw, Any,
AccountCreateContract) plus the two Stake 2.0 messages declared here through Google's
protobuf runtime with java-tron's field numbers (core/contract/balance_contract.proto).
Every signature comes from tronpy's ``PrivateKey.sign_msg_hash`` over the txID.
The client has no reachable node: any request would fail.
"""

import hashlib
import json
import os
import sys

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from tronpy import Tron
from tronpy.contract import Contract
from tronpy.keys import PrivateKey, to_raw_address
from tronpy.proto import tron_pb2
from tronpy.proto.transaction import _raw_data_to_protobuf
from tronpy.providers import HTTPProvider
from tronpy.version import VERSION

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "..", "..", "tests", "fixtures", "tron", "inputs.json")

TRC20_ABI = [
    {
        "type": "function",
        "name": "transfer",
        "stateMutability": "nonpayable",
        "inputs": [{"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}],
        "outputs": [{"name": "", "type": "bool"}],
    }
]

RESOURCE = {"BANDWIDTH": 0, "ENERGY": 1}


def stake2_messages():
    """DelegateResourceContract / UnDelegateResourceContract (java-tron field numbers)."""
    f = descriptor_pb2.FileDescriptorProto(name="stake2_vectors.proto", package="protocol", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    for name, fields in [
        (
            "DelegateResourceContract",
            [("owner_address", 1, T.TYPE_BYTES), ("resource", 2, T.TYPE_INT32), ("balance", 3, T.TYPE_INT64),
             ("receiver_address", 4, T.TYPE_BYTES), ("lock", 5, T.TYPE_BOOL), ("lock_period", 6, T.TYPE_INT64)],
        ),
        (
            "UnDelegateResourceContract",
            [("owner_address", 1, T.TYPE_BYTES), ("resource", 2, T.TYPE_INT32), ("balance", 3, T.TYPE_INT64),
             ("receiver_address", 4, T.TYPE_BYTES)],
        ),
    ]:
        m = f.message_type.add(name=name)
        for fname, num, ftype in fields:
            m.field.add(name=fname, number=num, type=ftype, label=T.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {
        n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"protocol.{n}"))
        for n in ("DelegateResourceContract", "UnDelegateResourceContract")
    }


def raw_with_contract(block, type_name, param):
    contract = tron_pb2.Transaction.Contract(
        type=getattr(tron_pb2.Transaction.Contract.ContractType, type_name),
        parameter=any_pb2.Any(type_url=f"type.googleapis.com/protocol.{type_name}", value=param.SerializeToString()),
    )
    return tron_pb2.Transaction.raw(
        ref_block_bytes=bytes.fromhex(block["ref_block_bytes"]),
        ref_block_hash=bytes.fromhex(block["ref_block_hash"]),
        expiration=block["expiration"],
        timestamp=block["timestamp"],
        contract=[contract],
    ).SerializeToString()


def main():
    with open(INPUTS) as fh:
        inputs = json.load(fh)
    key = PrivateKey(bytes.fromhex(inputs["private_key"]))
    owner = key.public_key.to_base58check_address()
    block = inputs["block"]
    # tronpy's block id: 8 bytes of number then 24 of hash; build() takes bytes 6..8 as
    # ref_block_bytes and 8..16 as ref_block_hash.
    ref_block_id = "0" * 12 + block["ref_block_bytes"] + block["ref_block_hash"] + "0" * 32
    client = Tron(HTTPProvider("http://127.0.0.1:9", timeout=1.0))
    stake2 = stake2_messages()

    def offline(builder):
        builder._raw_data["timestamp"] = block["timestamp"]
        builder._raw_data["expiration"] = block["expiration"]
        tx = builder.build(offline=True, ref_block_id=ref_block_id)
        raw_hex = _raw_data_to_protobuf(tx._raw_data).SerializeToString().hex()
        return raw_hex, tx.txid

    out = []
    for c in inputs["cases"]:
        kind = c["kind"]
        if kind == "trc20_transfer":
            contract = Contract(addr=c["contract"], abi=TRC20_ABI, client=client)
            builder = contract.functions.transfer(c["to"], int(c["amount"])).with_owner(owner).fee_limit(c["fee_limit"])
            raw_hex, txid = offline(builder)
        elif kind == "trx_transfer":
            raw_hex, txid = offline(client.trx.transfer(owner, c["to"], c["amount"]))
        elif kind in ("delegate_resource", "undelegate_resource"):
            name = "DelegateResourceContract" if kind == "delegate_resource" else "UnDelegateResourceContract"
            param = stake2[name](
                owner_address=to_raw_address(owner),
                resource=RESOURCE[c["resource"]],
                balance=c["balance"],
                receiver_address=to_raw_address(c["receiver"]),
            )
            raw = raw_with_contract(block, name, param)
            raw_hex, txid = raw.hex(), hashlib.sha256(raw).hexdigest()
        elif kind == "account_create":
            param = tron_pb2.AccountCreateContract(
                owner_address=to_raw_address(owner), account_address=to_raw_address(c["account"])
            )
            raw = raw_with_contract(block, "AccountCreateContract", param)
            raw_hex, txid = raw.hex(), hashlib.sha256(raw).hexdigest()
        else:
            raise SystemExit(f"unknown kind {kind}")
        assert hashlib.sha256(bytes.fromhex(raw_hex)).hexdigest() == txid
        sig = key.sign_msg_hash(bytes.fromhex(txid))
        out.append({"name": c["name"], "owner": owner, "raw_data_hex": raw_hex, "txid": txid, "signature": sig.hex()})
    json.dump({"generator": f"tronpy {VERSION}", "vectors": out}, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
