// Independent Solana fixtures from @solana/web3.js + @solana/spl-token (JavaScript).
//
// Reads scripts/solana/fixtures.json.in, writes tests/fixtures/solana/web3js.json:
// addresses of key purposes (the LocalSigner derivation, reimplemented here with node's
// crypto), associated token accounts (spl-token's getAssociatedTokenAddressSync), and
// signed provisioning and transfer transactions (spl-token's instruction builders,
// web3.js's Message serialization, ed25519 signing and wire format).
//
// Run through scripts/solana/gen-fixtures.sh, which installs the pinned packages.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const modules = process.env.SOLANA_FIXTURE_MODULES;
const req = (name) => require(path.join(modules, 'node_modules', name));
const web3 = req('@solana/web3.js');
const spl = req('@solana/spl-token');
const bs58Module = req('bs58'); // web3.js's own dependency
const bs58 = bs58Module.default || bs58Module;
const { PublicKey, Keypair, Message, VersionedTransaction, TransactionMessage } = web3;

const MEMO_PROGRAM = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

const here = __dirname;
const input = JSON.parse(fs.readFileSync(path.join(here, 'fixtures.json.in'), 'utf8'));
const out = process.argv[2] || path.join(here, '..', '..', 'tests', 'fixtures', 'solana', 'web3js.json');

const seed = Buffer.from(input.master_seed_hex, 'hex');

// stablecoin_core::memory::LocalSigner: HMAC-SHA512(seed, "stablecoin/v1/ed25519/<path>/0"),
// first 32 bytes = the ed25519 secret seed.
function keypairOf(purposePath) {
  const mac = crypto.createHmac('sha512', seed);
  mac.update(`stablecoin/v1/ed25519/${purposePath}/0`);
  return Keypair.fromSeed(mac.digest().subarray(0, 32));
}

const keys = {};
for (const p of input.purposes) keys[p] = keypairOf(p);
const mints = {};
for (const [t, m] of Object.entries(input.mints)) mints[t] = new PublicKey(m);
const blockhash = input.blockhash;
if (new PublicKey(blockhash).toBytes().length !== 32) throw new Error('bad blockhash');

// The legacy key order the Rust SDK produces: payer; then writable signers, read-only
// signers, writable non-signers, read-only non-signers, each group in ascending byte
// order of the key. (web3.js's own compiler keeps insertion order instead: both are
// valid messages; the ordering is reimplemented here and the result is checked against
// web3.js's compiler for the same keys, header and instructions below.)
function compileLegacy(instructions, payer) {
  const metas = new Map();
  const meta = (k) => {
    const s = k.toBase58();
    if (!metas.has(s)) metas.set(s, { key: k, signer: false, writable: false });
    return metas.get(s);
  };
  for (const ix of instructions) {
    meta(ix.programId);
    for (const a of ix.keys) {
      const m = meta(a.pubkey);
      m.signer = m.signer || a.isSigner;
      m.writable = m.writable || a.isWritable;
    }
  }
  const p = meta(payer);
  p.signer = true;
  p.writable = true;
  const rest = [...metas.values()].filter((m) => !m.key.equals(payer));
  const byBytes = (a, b) => Buffer.compare(Buffer.from(a.key.toBytes()), Buffer.from(b.key.toBytes()));
  const group = (signer, writable) =>
    rest.filter((m) => m.signer === signer && m.writable === writable).sort(byBytes);
  const ordered = [p, ...group(true, true), ...group(true, false), ...group(false, true), ...group(false, false)];
  const accountKeys = ordered.map((m) => m.key);
  const index = (k) => accountKeys.findIndex((x) => x.equals(k));
  const header = {
    numRequiredSignatures: ordered.filter((m) => m.signer).length,
    numReadonlySignedAccounts: ordered.filter((m) => m.signer && !m.writable).length,
    numReadonlyUnsignedAccounts: ordered.filter((m) => !m.signer && !m.writable).length,
  };
  const compiled = instructions.map((ix) => ({
    programIdIndex: index(ix.programId),
    accounts: ix.keys.map((a) => index(a.pubkey)),
    data: bs58.encode(ix.data),
  }));
  const message = new Message({ header, accountKeys, recentBlockhash: blockhash, instructions: compiled });

  // Same message as web3.js's compiler up to key order?
  const theirs = new TransactionMessage({ payerKey: payer, recentBlockhash: blockhash, instructions }).compileToLegacyMessage();
  const set = (ks) => ks.map((k) => k.toBase58()).sort().join(',');
  if (set(theirs.accountKeys) !== set(accountKeys)) throw new Error('key sets differ from web3.js compile');
  for (const f of ['numRequiredSignatures', 'numReadonlySignedAccounts', 'numReadonlyUnsignedAccounts']) {
    if (theirs.header[f] !== header[f]) throw new Error(`header ${f} differs from web3.js compile`);
  }
  if (!theirs.accountKeys[0].equals(payer)) throw new Error('web3.js payer not first');
  return message;
}

function signed(instructions, payer, signers) {
  const message = compileLegacy(instructions, payer);
  const tx = new VersionedTransaction(message);
  tx.sign(signers);
  const hex = (b) => Buffer.from(b).toString('hex');
  return {
    account_keys: message.accountKeys.map((k) => k.toBase58()),
    message_hex: hex(message.serialize()),
    signatures: tx.signatures.map((s) => bs58.encode(Buffer.from(s))),
    wire_hex: hex(tx.serialize()),
  };
}

const result = {
  generator: `@solana/web3.js ${req('@solana/web3.js/package.json').version} + @solana/spl-token ${req('@solana/spl-token/package.json').version} on node ${process.version}`,
  master_seed_hex: input.master_seed_hex,
  blockhash,
  mints: input.mints,
  keys: input.purposes.map((p) => ({ purpose_path: p, address: keys[p].publicKey.toBase58() })),
  atas: [],
  transactions: [],
};

for (const p of input.purposes) {
  for (const [t, mint] of Object.entries(mints)) {
    result.atas.push({
      owner: keys[p].publicKey.toBase58(),
      mint: mint.toBase58(),
      token: t,
      ata: spl.getAssociatedTokenAddressSync(mint, keys[p].publicKey, false, spl.TOKEN_PROGRAM_ID, spl.ASSOCIATED_TOKEN_PROGRAM_ID).toBase58(),
    });
  }
}

for (const t of input.transactions) {
  const payer = keys[t.fee_payer];
  let instructions;
  let signers;
  if (t.kind === 'provision') {
    const owner = keys[t.owner].publicKey;
    instructions = t.mints.map((m) =>
      spl.createAssociatedTokenAccountIdempotentInstruction(
        payer.publicKey,
        spl.getAssociatedTokenAddressSync(mints[m], owner),
        owner,
        mints[m],
      ),
    );
    signers = [payer];
  } else {
    const source = keys[t.source];
    const mint = mints[t.mint];
    const sourceAta = spl.getAssociatedTokenAddressSync(mint, source.publicKey);
    instructions = [];
    // The compute budget first, from web3.js's own ComputeBudgetProgram.
    if (t.compute_budget) {
      instructions.push(web3.ComputeBudgetProgram.setComputeUnitLimit({ units: t.compute_budget.unit_limit }));
      instructions.push(
        web3.ComputeBudgetProgram.setComputeUnitPrice({ microLamports: BigInt(t.compute_budget.unit_price_micro_lamports) }),
      );
    }
    for (const leg of t.legs) {
      const recipient = keys[leg.recipient].publicKey;
      const dest = spl.getAssociatedTokenAddressSync(mint, recipient);
      if (leg.create_recipient_ata) {
        instructions.push(spl.createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, dest, recipient, mint));
      }
      instructions.push(
        spl.createTransferCheckedInstruction(sourceAta, mint, dest, source.publicKey, BigInt(leg.amount), t.decimals),
      );
    }
    // The payment id last, in a Memo v2 instruction: no accounts, the UTF-8 text as data.
    if (t.memo !== undefined) {
      instructions.push(
        new web3.TransactionInstruction({ programId: MEMO_PROGRAM, keys: [], data: Buffer.from(t.memo, 'utf8') }),
      );
    }
    signers = [payer, source];
  }
  result.transactions.push({ name: t.name, ...signed(instructions, payer.publicKey, signers) });
}

fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(`wrote ${out}`);
