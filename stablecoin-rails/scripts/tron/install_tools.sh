#!/usr/bin/env sh
# Installs the npm tools of the TRON rail's tests into scripts/tron/node_modules
# (ignored by git): anvil (the local test node's EVM backend, found there by
# stablecoin-tron-node), tronweb (golden vectors) and solc (the test token's bytecode).
set -eu
cd "$(dirname "$0")"
npm install --no-save --no-package-lock --no-audit --no-fund --prefix . \
  @foundry-rs/anvil-linux-amd64@1.7.1 tronweb@6.5.1 solc@0.8.26
./node_modules/.bin/anvil --version
