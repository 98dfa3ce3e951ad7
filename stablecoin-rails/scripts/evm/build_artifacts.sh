#!/usr/bin/env sh
# Rebuilds tests/fixtures/evm/contracts.json, offline but for the npm registry:
#   - EntryPoint v0.8 and SimpleAccountFactory: the compiled artifacts shipped in
#     @account-abstraction/contracts@0.8.0, byte for byte;
#   - ERC1967Proxy's creation code: cut out of SimpleAccountFactory's runtime code (the
#     factory embeds it for CREATE2), so the offline address derivation uses exactly the
#     bytes the factory deploys;
#   - VerifyingPaymaster.sol and TestToken.sol: compiled here with solcjs 0.8.28.
#
#   sh stablecoin-rails/scripts/evm/build_artifacts.sh
set -eu
cd "$(dirname "$0")"
npm install --no-save --no-package-lock --no-audit --no-fund --prefix ./build \
  @account-abstraction/contracts@0.8.0 solc@0.8.28
NODE_PATH=./build/node_modules node build_artifacts.js > ../../tests/fixtures/evm/contracts.json
echo "wrote tests/fixtures/evm/contracts.json"
