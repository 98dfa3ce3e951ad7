"""Second independent set of Solana fixtures, from `solders` (PyPI).

Reads scripts/solana/fixtures.json.in, writes tests/fixtures/solana/solders.json with the
same schema as gen_web3js.cjs. Here the SPL instructions are not taken from any SPL
library: they are written out from the programs' published layouts (account lists and
instruction data), the ATA is `find_program_address([owner, token_program, mint],
ATA_PROGRAM)`, and solders compiles, signs and serializes the legacy transaction.

Run through scripts/solana/gen-fixtures.sh, which installs the pinned package.
"""

import hashlib
import hmac
import json
import struct
import sys
from importlib.metadata import version
from pathlib import Path

from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.hash import Hash
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.transaction import Transaction

HERE = Path(__file__).resolve().parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "tests/fixtures/solana/solders.json"

TOKEN_PROGRAM = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
ATA_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
MEMO_PROGRAM = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

spec = json.loads((HERE / "fixtures.json.in").read_text())
seed = bytes.fromhex(spec["master_seed_hex"])


def keypair_of(purpose_path: str) -> Keypair:
    """stablecoin_core::memory::LocalSigner's ed25519 derivation."""
    msg = f"stablecoin/v1/ed25519/{purpose_path}/0".encode()
    return Keypair.from_seed(hmac.new(seed, msg, hashlib.sha512).digest()[:32])


def ata_of(owner: Pubkey, mint: Pubkey) -> Pubkey:
    return Pubkey.find_program_address([bytes(owner), bytes(TOKEN_PROGRAM), bytes(mint)], ATA_PROGRAM)[0]


def create_idempotent(payer: Pubkey, owner: Pubkey, mint: Pubkey) -> Instruction:
    # spl-associated-token-account: instruction 1 = CreateIdempotent.
    return Instruction(
        ATA_PROGRAM,
        bytes([1]),
        [
            AccountMeta(payer, is_signer=True, is_writable=True),
            AccountMeta(ata_of(owner, mint), is_signer=False, is_writable=True),
            AccountMeta(owner, is_signer=False, is_writable=False),
            AccountMeta(mint, is_signer=False, is_writable=False),
            AccountMeta(SYSTEM_PROGRAM, is_signer=False, is_writable=False),
            AccountMeta(TOKEN_PROGRAM, is_signer=False, is_writable=False),
        ],
    )


def transfer_checked(source: Pubkey, mint: Pubkey, dest: Pubkey, authority: Pubkey, amount: int, decimals: int) -> Instruction:
    # spl-token: instruction 12 = TransferChecked { amount: u64 LE, decimals: u8 }.
    return Instruction(
        TOKEN_PROGRAM,
        bytes([12]) + struct.pack("<QB", amount, decimals),
        [
            AccountMeta(source, is_signer=False, is_writable=True),
            AccountMeta(mint, is_signer=False, is_writable=False),
            AccountMeta(dest, is_signer=False, is_writable=True),
            AccountMeta(authority, is_signer=True, is_writable=False),
        ],
    )


keys = {p: keypair_of(p) for p in spec["purposes"]}
mints = {t: Pubkey.from_string(m) for t, m in spec["mints"].items()}
blockhash = Hash.from_string(spec["blockhash"])

result = {
    "generator": f"solders {version('solders')} (SPL layouts written out by hand)",
    "master_seed_hex": spec["master_seed_hex"],
    "blockhash": spec["blockhash"],
    "mints": spec["mints"],
    "keys": [{"purpose_path": p, "address": str(keys[p].pubkey())} for p in spec["purposes"]],
    "atas": [
        {"owner": str(keys[p].pubkey()), "mint": str(m), "token": t, "ata": str(ata_of(keys[p].pubkey(), m))}
        for p in spec["purposes"]
        for t, m in mints.items()
    ],
    "transactions": [],
}

for t in spec["transactions"]:
    payer = keys[t["fee_payer"]]
    if t["kind"] == "provision":
        owner = keys[t["owner"]].pubkey()
        ixs = [create_idempotent(payer.pubkey(), owner, mints[m]) for m in t["mints"]]
        signers = [payer]
    else:
        source = keys[t["source"]]
        mint = mints[t["mint"]]
        ixs = []
        # The compute budget first, from solders' own compute_budget module.
        if "compute_budget" in t:
            cb = t["compute_budget"]
            ixs.append(set_compute_unit_limit(cb["unit_limit"]))
            ixs.append(set_compute_unit_price(int(cb["unit_price_micro_lamports"])))
        for leg in t["legs"]:
            recipient = keys[leg["recipient"]].pubkey()
            if leg["create_recipient_ata"]:
                ixs.append(create_idempotent(payer.pubkey(), recipient, mint))
            ixs.append(
                transfer_checked(
                    ata_of(source.pubkey(), mint), mint, ata_of(recipient, mint), source.pubkey(), int(leg["amount"]), t["decimals"]
                )
            )
        # The payment id last, in a Memo v2 instruction: no accounts, the UTF-8 text as data.
        if "memo" in t:
            ixs.append(Instruction(MEMO_PROGRAM, t["memo"].encode("utf-8"), []))
        signers = [payer, source]
    message = Message.new_with_blockhash(ixs, payer.pubkey(), blockhash)
    tx = Transaction(signers, message, blockhash)
    result["transactions"].append(
        {
            "name": t["name"],
            "account_keys": [str(k) for k in message.account_keys],
            "message_hex": bytes(message).hex(),
            "signatures": [str(s) for s in tx.signatures],
            "wire_hex": bytes(tx).hex(),
        }
    )

OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(result, indent=2) + "\n")
print(f"wrote {OUT}")
