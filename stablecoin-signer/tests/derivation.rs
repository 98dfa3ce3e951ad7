//! The derivation written in docs/signer-protocol.md is the one the signer uses: a KMS
//! adapter or an auditor following the document gets the same keys.

use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};

fn documented(seed: &[u8; 32], msg: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(seed).unwrap();
    mac.update(msg.as_bytes());
    mac.finalize().into_bytes()[..32].try_into().unwrap()
}

#[tokio::test]
async fn keys_follow_the_documented_derivation() {
    let seed = [0x42; 32];
    let local = LocalSigner::from_seed(seed);
    for p in [
        KeyPurpose::Wallet("wal_1".into()),
        KeyPurpose::PhoneWallet("+2250700000001".into()),
        KeyPurpose::EscrowDeal("esc_1".into()),
        KeyPurpose::Treasury,
        KeyPurpose::Sponsor,
        KeyPurpose::ServiceFees,
    ] {
        let path = p.path();
        // Counter 0 is a valid scalar for these (the retry is a 2^-128 event).
        let secp = documented(&seed, &format!("stablecoin/v1/secp256k1/{path}/0"));
        assert_eq!(local.secp256k1_secret(&p), secp, "{path}");
        let pk = k256::ecdsa::SigningKey::from_bytes(&secp.into())
            .unwrap()
            .verifying_key()
            .to_encoded_point(true)
            .as_bytes()
            .to_vec();
        assert_eq!(
            local.public_key(&p, Curve::Secp256k1).await.unwrap().bytes,
            pk
        );

        let ed = documented(&seed, &format!("stablecoin/v1/ed25519/{path}/0"));
        assert_eq!(local.ed25519_secret(&p), ed, "{path}");
        let pk = ed25519_dalek::SigningKey::from_bytes(&ed)
            .verifying_key()
            .to_bytes();
        assert_eq!(
            local.public_key(&p, Curve::Ed25519).await.unwrap().bytes,
            pk
        );
    }
    assert_eq!(
        KeyPurpose::Treasury.path(),
        "service/treasury",
        "the example in the document"
    );

    // The symmetric keys: HMAC-SHA256(seed, label).
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&seed).unwrap();
    mac.update(stablecoin_signer::protocol::OTP_CODE_KEY_LABEL.as_bytes());
    let otp: [u8; 32] = mac.finalize().into_bytes().into();
    assert_eq!(
        stablecoin_core::domain::otp::CodeKey::new(otp),
        stablecoin_core::domain::otp::CodeKey::from_master_seed(&seed)
    );
}
