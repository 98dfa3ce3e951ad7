#!/usr/bin/env sh
# Installs what the EVM rail's tests need into scripts/evm/node_modules (ignored by git):
# Anvil, the local node the tests start (found there by tests/evm_anvil.rs). The
# contracts the tests deploy are committed, compiled, in tests/fixtures/evm/contracts.json;
# build_artifacts.sh rebuilds them (it installs the contracts package and solcjs itself).
set -eu
cd "$(dirname "$0")"
if [ ! -x ./node_modules/.bin/anvil ]; then
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix . \
    @foundry-rs/anvil-linux-amd64@1.7.1
fi
./node_modules/.bin/anvil --version
