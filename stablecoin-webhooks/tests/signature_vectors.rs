//! Our signatures against vectors computed by an independent HMAC implementation
//! (Python's `hmac`; `scripts/gen_hmac_vectors.py` made `fixtures/hmac_vectors.json`),
//! and verification's refusals: a changed byte, another secret, a rotated-out secret,
//! a truncated or malformed signature, a missing header.

use serde_json::Value;
use stablecoin_core::memory::SeededEntropy;
use stablecoin_webhooks::{Family, WebhookError};

fn vectors() -> Vec<(Family, String, Vec<u8>, String)> {
    let v: Value =
        serde_json::from_str(include_str!("fixtures/hmac_vectors.json")).expect("fixture");
    v["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|c| {
            let family = match c["family"].as_str().unwrap() {
                "wallet" => Family::Wallet,
                "payments" => Family::Payments,
                other => panic!("family {other}"),
            };
            (
                family,
                c["secret"].as_str().unwrap().to_string(),
                c["body"].as_str().unwrap().as_bytes().to_vec(),
                c["header"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn python_hmac_vectors_match_byte_for_byte() {
    let vs = vectors();
    assert_eq!(vs.len(), 5);
    for (family, secret, body, header) in vs {
        assert_eq!(family.sign(&secret, &body), header, "{family:?} {secret}");
        assert_eq!(family.verify(&secret, &body, Some(&header)), Ok(()));
    }
}

#[test]
fn verification_refuses_everything_else() {
    for (family, secret, body, header) in vectors() {
        // One changed byte of the body (or one byte more on an empty body).
        let mut changed = body.clone();
        match changed.first_mut() {
            Some(b) => *b ^= 0x01,
            None => changed.push(b' '),
        }
        assert_eq!(
            family.verify(&secret, &changed, Some(&header)),
            Err(WebhookError::SignatureMismatch)
        );
        // Another secret.
        let other = format!("{secret}x");
        assert_eq!(
            family.verify(&other, &body, Some(&header)),
            Err(WebhookError::SignatureMismatch)
        );
        // A truncated signature is malformed, never a prefix match.
        let truncated = &header[..header.len() - 2];
        assert!(matches!(
            family.verify(&secret, &body, Some(truncated)),
            Err(WebhookError::SignatureMalformed { .. })
        ));
        // A changed hex digit is a mismatch.
        let mut flipped = header.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert_eq!(
            family.verify(&secret, &body, Some(&flipped)),
            Err(WebhookError::SignatureMismatch)
        );
        // No header at all.
        assert!(matches!(
            family.verify(&secret, &body, None),
            Err(WebhookError::SignatureMissing { .. })
        ));
    }
    // The other family's form is malformed: the wallet family needs its prefix.
    let sig = Family::Payments.sign("k", b"{}");
    assert!(matches!(
        Family::Wallet.verify("k", b"{}", Some(&sig)),
        Err(WebhookError::SignatureMalformed { .. })
    ));
}

#[test]
fn a_rotated_out_secret_no_longer_verifies() {
    let entropy = SeededEntropy::new(9);
    let old = Family::Payments.generate_secret(&entropy);
    let new = Family::Payments.generate_secret(&entropy);
    let body = br#"{"event":"payment.confirmed","session_id":"ps_1"}"#;
    let signed_with_old = Family::Payments.sign(&old, body);
    assert_eq!(
        Family::Payments.verify(&new, body, Some(&signed_with_old)),
        Err(WebhookError::SignatureMismatch)
    );
    let signed_with_new = Family::Payments.sign(&new, body);
    assert_eq!(
        Family::Payments.verify(&new, body, Some(&signed_with_new)),
        Ok(())
    );
}
