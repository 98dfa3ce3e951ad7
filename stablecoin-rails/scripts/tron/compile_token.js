// Compiles scripts/tron/UsdtLike.sol with solcjs (offline, the compiler ships in the npm
// package) for the EVM version TRON's TVM follows most closely (istanbul), and writes its
// runtime bytecode for the local test node:
//
//   scripts/tron/install_tools.sh
//   NODE_PATH=scripts/tron/node_modules node scripts/tron/compile_token.js \
//     > tests/fixtures/tron/usdt_like.json
'use strict';
const fs = require('fs');
const path = require('path');
const solc = require('solc');

const source = fs.readFileSync(path.join(__dirname, 'UsdtLike.sol'), 'utf8');
const input = {
  language: 'Solidity',
  sources: { 'UsdtLike.sol': { content: source } },
  settings: {
    evmVersion: 'istanbul',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { UsdtLike: ['evm.deployedBytecode.object', 'evm.methodIdentifiers'] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
if (errors.length) {
  console.error(errors.map((e) => e.formattedMessage).join('\n'));
  process.exit(1);
}
const c = out.contracts['UsdtLike.sol'].UsdtLike;
const doc = {
  compiler: `solc ${solc.version()}`,
  evm_version: 'istanbul',
  source_sha256: require('crypto').createHash('sha256').update(source).digest('hex'),
  method_identifiers: c.evm.methodIdentifiers,
  runtime_bytecode: c.evm.deployedBytecode.object,
};
process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
