// See build_artifacts.sh. Prints tests/fixtures/evm/contracts.json on stdout.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const solc = require('solc');

const aaRoot = path.dirname(require.resolve('@account-abstraction/contracts/package.json'));
const artifact = (name) => JSON.parse(fs.readFileSync(path.join(aaRoot, 'artifacts', `${name}.json`), 'utf8'));

// ERC1967Proxy's creation code inside the factory's runtime code: the second contract
// header (6080604052) up to the end of its metadata (a264...0033).
function proxyCreationCode(factoryRuntime) {
  const hex = factoryRuntime.replace(/^0x/, '');
  const starts = [];
  for (let i = hex.indexOf('6080604052'); i >= 0; i = hex.indexOf('6080604052', i + 2)) {
    if (i % 2 === 0) starts.push(i);
  }
  if (starts.length < 1) throw new Error('no embedded contract in the factory');
  const start = starts[0] === 0 ? starts[1] : starts[0];
  const metaEnd = /64736f6c6343[0-9a-f]{6}0033/g;
  metaEnd.lastIndex = start;
  const m = metaEnd.exec(hex);
  if (!m) throw new Error('no metadata end after the embedded contract');
  return '0x' + hex.slice(start, m.index + m[0].length);
}

function findImport(p) {
  for (const base of [aaRoot, path.join(aaRoot, '..', '..')]) {
    const rel = p.replace(/^@account-abstraction\/contracts\//, '');
    for (const candidate of [path.join(aaRoot, rel), path.join(base, p)]) {
      if (fs.existsSync(candidate)) return { contents: fs.readFileSync(candidate, 'utf8') };
    }
  }
  return { error: `not found: ${p}` };
}

const sources = {};
for (const f of ['VerifyingPaymaster.sol', 'TestToken.sol']) {
  sources[f] = { content: fs.readFileSync(path.join(__dirname, f), 'utf8') };
}
const input = {
  language: 'Solidity',
  sources,
  settings: {
    evmVersion: 'cancun',
    optimizer: { enabled: true, runs: 1000000 },
    viaIR: true,
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
const errors = (out.errors || []).filter((e) => e.severity === 'error');
if (errors.length) {
  console.error(errors.map((e) => e.formattedMessage).join('\n'));
  process.exit(1);
}
const compiled = (file, name) => '0x' + out.contracts[file][name].evm.bytecode.object;
const sha = (s) => crypto.createHash('sha256').update(s).digest('hex');

const factory = artifact('SimpleAccountFactory');
const doc = {
  generated_by: 'stablecoin-rails/scripts/evm/build_artifacts.sh',
  account_abstraction: '@account-abstraction/contracts@0.8.0',
  compiler: `solc ${solc.version()} (cancun, optimizer 1000000 runs, via-IR)`,
  sources_sha256: {
    'VerifyingPaymaster.sol': sha(sources['VerifyingPaymaster.sol'].content),
    'TestToken.sol': sha(sources['TestToken.sol'].content),
  },
  entry_point: artifact('EntryPoint').bytecode,
  simple_account_factory: factory.bytecode,
  erc1967_proxy_creation_code: proxyCreationCode(factory.deployedBytecode),
  verifying_paymaster: compiled('VerifyingPaymaster.sol', 'VerifyingPaymaster'),
  test_token: compiled('TestToken.sol', 'TestToken'),
};
process.stdout.write(JSON.stringify(doc, null, 2) + '\n');
