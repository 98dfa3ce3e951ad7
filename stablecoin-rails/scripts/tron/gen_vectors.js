// Golden vectors for the TRON rail, built and signed offline by tronweb.
//
//   scripts/tron/install_tools.sh
//   NODE_PATH=scripts/tron/node_modules node scripts/tron/gen_vectors.js \
//     > tests/fixtures/tron/tronweb_vectors.json
//
// Reads tests/fixtures/tron/inputs.json. tronweb's own TransactionBuilder builds each
// transaction (blockHeader option, txLocal for TRC-20) and Trx.sign signs it; the full
// node URL points at a closed port and any request to it is refused, so nothing comes
// from the network.
'use strict';
const fs = require('fs');
const path = require('path');
const { TronWeb } = require('tronweb');

async function main() {
  const inputs = JSON.parse(
    fs.readFileSync(path.join(__dirname, '../../tests/fixtures/tron/inputs.json'), 'utf8'),
  );
  const tronWeb = new TronWeb({ fullHost: 'http://127.0.0.1:9', privateKey: inputs.private_key });
  // Refuse every network call: the vectors must be built offline.
  for (const node of [tronWeb.fullNode, tronWeb.solidityNode, tronWeb.eventServer]) {
    if (node) node.request = async (url) => { throw new Error(`network call attempted: ${url}`); };
  }
  const owner = tronWeb.address.fromPrivateKey(inputs.private_key);
  const blockHeader = { ...inputs.block };
  const tb = tronWeb.transactionBuilder;
  const out = [];
  for (const c of inputs.cases) {
    let tx;
    switch (c.kind) {
      case 'trc20_transfer': {
        const r = await tb.triggerSmartContract(
          c.contract,
          'transfer(address,uint256)',
          { feeLimit: c.fee_limit, txLocal: true, blockHeader },
          [{ type: 'address', value: c.to }, { type: 'uint256', value: c.amount }],
          owner,
        );
        tx = r.transaction;
        break;
      }
      case 'trx_transfer':
        tx = await tb.sendTrx(c.to, c.amount, owner, { blockHeader });
        break;
      case 'delegate_resource':
        tx = await tb.delegateResource(c.balance, c.receiver, c.resource, owner, false, undefined, { blockHeader });
        break;
      case 'undelegate_resource':
        tx = await tb.undelegateResource(c.balance, c.receiver, c.resource, owner, { blockHeader });
        break;
      case 'account_create':
        tx = await tb.createAccount(c.account, owner, { blockHeader });
        break;
      default:
        throw new Error(`unknown kind ${c.kind}`);
    }
    const signed = await tronWeb.trx.sign(tx, inputs.private_key);
    out.push({
      name: c.name,
      owner,
      raw_data_hex: signed.raw_data_hex,
      txid: signed.txID,
      signature: signed.signature[0],
    });
  }
  const doc = {
    generator: `tronweb ${TronWeb.version}`,
    vectors: out,
  };
  process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
