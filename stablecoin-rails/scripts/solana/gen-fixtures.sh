#!/usr/bin/env bash
# Regenerates tests/fixtures/solana/{web3js,solders}.json from two independent Solana
# implementations (JavaScript and Python). The Rust tests in tests/solana_fixtures.rs
# compare the rail's own derivations and signed transaction bytes with both.
#
# Needs node + npm and python3; installs pinned packages outside the repository:
#   $SOLANA_FIXTURE_CACHE (default /tmp/stablecoin-solana-fixtures)/{node,venv}
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
crate="$(cd "$here/../.." && pwd)"
cache="${SOLANA_FIXTURE_CACHE:-/tmp/stablecoin-solana-fixtures}"
out="$crate/tests/fixtures/solana"
mkdir -p "$cache/node" "$out"

if [ ! -d "$cache/node/node_modules/@solana/spl-token" ]; then
  npm install --prefix "$cache/node" --no-audit --no-fund --silent \
    @solana/web3.js@1.98.0 @solana/spl-token@0.4.15
fi
SOLANA_FIXTURE_MODULES="$cache/node" node "$here/gen_web3js.cjs" "$out/web3js.json"

if [ ! -x "$cache/venv/bin/python" ]; then
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install --quiet solders==0.29.0
fi
"$cache/venv/bin/python" "$here/gen_solders.py" "$out/solders.json"

# The two implementations must agree before the Rust side is compared with them.
python3 - "$out/web3js.json" "$out/solders.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for f in ("keys", "atas"):
    assert a[f] == b[f], f"{f} differ between web3.js and solders"
for x, y in zip(a["transactions"], b["transactions"], strict=True):
    for f in ("account_keys", "message_hex", "signatures", "wire_hex"):
        assert x[f] == y[f], f"{x['name']}: {f} differ between web3.js and solders"
print("web3.js and solders agree")
PY
