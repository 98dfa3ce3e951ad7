#!/usr/bin/env python3
"""Independent HMAC-SHA256 vectors for stablecoin-webhooks' signatures.

Computed with Python's standard `hmac` module, not with our Rust code, so the test
`tests/signature_vectors.rs` checks our signing against an independent implementation.
Regenerate (the output is committed):

    python3 stablecoin-webhooks/scripts/gen_hmac_vectors.py > stablecoin-webhooks/tests/fixtures/hmac_vectors.json
"""
import hashlib
import hmac
import json

CASES = [
    # (family, secret, body)
    ("wallet", "svcwh_3f1c9a7e5b2d4f6081a3c5e7f9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7",
     '{"event":"transfer.settled","transfer_id":"tr_01M83CMTGWWC1YF2WCE6WEYC08","status":"SETTLED",'
     '"amount_usdc":"24.925000","token":"USDC","tx_hash":"0x5e1d3a2b","updated_at":"2026-11-23T05:04:18Z"}'),
    ("wallet", "svcwh_00", '{"event":"user.linked","wallet_address":"0xe5379f28ac0404106d4cdb204a987f9429f2b566",'
     '"new_merchant_id":"ten_01","linked_at":"2026-11-23T05:04:18Z"}'),
    ("payments", "whsec_9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
     '{"event":"wallet.deposit.confirmed","data":{"customer_id":"c-1","deposit_id":42,'
     '"amount":"10.500000","safe_to_credit":true}}'),
    ("payments", "whsec_unicode", '{"event":"payment.confirmed","reference":"caf\u00e9 \u2713","amount":"1.00"}'),
    ("payments", "whsec_empty_body", ""),
]

out = []
for family, secret, body in CASES:
    raw = body.encode("utf-8")
    digest = hmac.new(secret.encode("utf-8"), raw, hashlib.sha256).hexdigest()
    header = "sha256=" + digest if family == "wallet" else digest
    out.append({"family": family, "secret": secret, "body": body, "header": header})
print(json.dumps({"generator": "python3 hmac (stdlib), see scripts/gen_hmac_vectors.py",
                  "vectors": out}, indent=2, ensure_ascii=False))
