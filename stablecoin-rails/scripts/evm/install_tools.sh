#!/usr/bin/env sh
# Installs what the EVM rail's tests need into scripts/evm/node_modules (ignored by git):
# - Anvil, the local node the tests start (found there by tests/evm_anvil.rs);
# - Uniswap V2's compiled contracts (`@uniswap/v2-core`: factory and pair;
#   `@uniswap/v2-periphery`: Router02 and WETH9), deployed on Anvil by the swap tests
#   (tests/evm_uniswap.rs) from their `build/*.json` artifacts as published, unmodified.
#   The periphery's only published release is 1.1.0-beta.0; its router's hard-coded pair
#   init-code hash (0x96e8ac42...845f, mainnet's) is the keccak of v2-core 1.0.1's pair
#   bytecode, which the tests check.
# - Alto (`@pimlico/alto`, 0.0.20: the first to know EntryPoint v0.8), Pimlico's ERC-4337
#   bundler, the external bundler of the `RpcBundler` tests (needs Node.js 20 or later).
# The other contracts the tests deploy are committed, compiled, in
# tests/fixtures/evm/contracts.json; build_artifacts.sh rebuilds them (it installs the
# contracts package and solcjs itself).
set -eu
cd "$(dirname "$0")"
# One npm install for all of them: a second `--no-save` install would prune the first's.
if [ ! -x ./node_modules/.bin/anvil ] ||
  [ ! -f ./node_modules/@uniswap/v2-core/build/UniswapV2Factory.json ] ||
  [ ! -f ./node_modules/@uniswap/v2-periphery/build/UniswapV2Router02.json ] ||
  [ ! -f ./node_modules/@pimlico/alto/package.json ]; then
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix . \
    @foundry-rs/anvil-linux-amd64@1.7.1 \
    @uniswap/v2-core@1.0.1 @uniswap/v2-periphery@1.1.0-beta.0 \
    @pimlico/alto@0.0.20
fi
# Alto (the bundler of tests/evm_alto.rs) listens on 0.0.0.0 and has no flag for the
# host: pin it to loopback in its RPC server (idempotent), and fail if the pin is gone.
alto_server=./node_modules/@pimlico/alto/esm/rpc/server.js
sed -i 's/host: "0\.0\.0\.0"/host: "127.0.0.1"/' "$alto_server"
if ! grep -q 'host: "127.0.0.1"' "$alto_server" || grep -q '0\.0\.0\.0' "$alto_server"; then
  echo "could not pin Alto's listen address to 127.0.0.1 in $alto_server" >&2
  exit 1
fi
./node_modules/.bin/anvil --version
# Alto needs a Node.js with import attributes (20 or later): fail here, not in a test.
if ! ./node_modules/.bin/alto --help >/dev/null 2>&1; then
  echo "Alto does not run on this Node.js ($(node --version)); it needs Node.js 20 or later" >&2
  exit 1
fi
echo "alto $(node -p "require('./node_modules/@pimlico/alto/package.json').version") on node $(node --version)"
