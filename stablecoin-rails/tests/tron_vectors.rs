//! Golden vectors: every transaction of `tests/fixtures/tron/inputs.json` rebuilt and
//! signed by `stablecoin_rails::tron` must match, byte for byte, what tronweb
//! (`tronweb_vectors.json`) and tronpy (`tronpy_vectors.json`) produced from the same
//! inputs (`scripts/tron/README.md` says how to regenerate them). Plus address encoding.
#![cfg(feature = "tron")]

use async_trait::async_trait;
use serde_json::Value;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, PublicKey, Signature, Signer, SignerError};
use stablecoin_rails::tron::tx::{self, Resource, TxHeader};
use stablecoin_rails::tron::{TronAddress, UnsignedTx};
use std::path::PathBuf;

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tron")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// A `Signer` holding one fixed secp256k1 key (the vectors' key), whatever the purpose.
struct FixedKeySigner(k256::ecdsa::SigningKey);

#[async_trait]
impl Signer for FixedKeySigner {
    async fn public_key(&self, _: &KeyPurpose, curve: Curve) -> Result<PublicKey, SignerError> {
        assert_eq!(curve, Curve::Secp256k1);
        Ok(PublicKey {
            curve,
            bytes: self
                .0
                .verifying_key()
                .to_encoded_point(true)
                .as_bytes()
                .to_vec(),
        })
    }
    async fn sign(
        &self,
        _: &KeyPurpose,
        _: Curve,
        digest: &[u8],
    ) -> Result<Signature, SignerError> {
        let (sig, recid) = self
            .0
            .sign_prehash_recoverable(digest)
            .map_err(|e| SignerError::InvalidInput(e.to_string()))?;
        let mut out = sig.to_bytes().to_vec();
        out.push(recid.to_byte());
        Ok(Signature(out))
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn addr(v: &Value, key: &str) -> TronAddress {
    TronAddress::parse(str_of(v, key)).unwrap()
}

fn build(case: &Value, header: &TxHeader, owner: &TronAddress) -> UnsignedTx {
    let resource = |c: &Value| match str_of(c, "resource") {
        "ENERGY" => Resource::Energy,
        "BANDWIDTH" => Resource::Bandwidth,
        other => panic!("resource {other}"),
    };
    match str_of(case, "kind") {
        "trc20_transfer" => tx::build_trc20_transfer(
            header,
            owner,
            &addr(case, "contract"),
            &addr(case, "to"),
            str_of(case, "amount").parse().unwrap(),
            case["fee_limit"].as_i64().unwrap(),
        ),
        "trx_transfer" => tx::build_trx_transfer(
            header,
            owner,
            &addr(case, "to"),
            case["amount"].as_u64().unwrap(),
        )
        .unwrap(),
        "delegate_resource" => tx::build_delegate_resource(
            header,
            owner,
            &addr(case, "receiver"),
            resource(case),
            case["balance"].as_u64().unwrap(),
        )
        .unwrap(),
        "undelegate_resource" => tx::build_undelegate_resource(
            header,
            owner,
            &addr(case, "receiver"),
            resource(case),
            case["balance"].as_u64().unwrap(),
        )
        .unwrap(),
        "account_create" => tx::build_account_create(header, owner, &addr(case, "account")),
        other => panic!("unknown kind {other}"),
    }
}

#[tokio::test]
async fn every_golden_vector_matches_tronweb_and_tronpy() {
    let inputs = fixture("inputs.json");
    let key_bytes = hex::decode(str_of(&inputs, "private_key")).unwrap();
    let signer = FixedKeySigner(k256::ecdsa::SigningKey::from_slice(&key_bytes).unwrap());
    let purpose = KeyPurpose::Treasury;
    let pk = signer.public_key(&purpose, Curve::Secp256k1).await.unwrap();
    let owner = TronAddress::from_public_key(&pk.bytes).unwrap();

    let block = &inputs["block"];
    let mut ref_block_bytes = [0u8; 2];
    ref_block_bytes.copy_from_slice(&hex::decode(str_of(block, "ref_block_bytes")).unwrap());
    let mut ref_block_hash = [0u8; 8];
    ref_block_hash.copy_from_slice(&hex::decode(str_of(block, "ref_block_hash")).unwrap());
    let header = TxHeader {
        ref_block_bytes,
        ref_block_hash,
        timestamp_ms: block["timestamp"].as_i64().unwrap(),
        expiration_ms: block["expiration"].as_i64().unwrap(),
    };

    let cases = inputs["cases"].as_array().unwrap();
    let mut checked = 0;
    for generator in ["tronweb_vectors.json", "tronpy_vectors.json"] {
        let doc = fixture(generator);
        let vectors = doc["vectors"].as_array().unwrap();
        assert_eq!(
            vectors.len(),
            cases.len(),
            "{generator}: one vector per case"
        );
        for (case, vector) in cases.iter().zip(vectors) {
            let name = str_of(case, "name");
            assert_eq!(str_of(vector, "name"), name, "{generator}: case order");
            assert_eq!(
                str_of(vector, "owner"),
                owner.to_base58(),
                "{generator} {name}: owner"
            );

            let unsigned = build(case, &header, &owner);
            assert_eq!(
                unsigned.raw_data_hex(),
                str_of(vector, "raw_data_hex").to_lowercase(),
                "{generator} {name}: raw_data"
            );
            assert_eq!(
                unsigned.txid_hex(),
                str_of(vector, "txid").to_lowercase(),
                "{generator} {name}: txID"
            );

            let signed = tx::sign_tx(&signer, &purpose, &owner, unsigned.clone())
                .await
                .unwrap();
            let theirs = hex::decode(str_of(vector, "signature")).unwrap();
            assert_eq!(theirs.len(), 65, "{generator} {name}: signature length");
            assert_eq!(
                hex::encode(&signed.signature[..64]),
                hex::encode(&theirs[..64]),
                "{generator} {name}: signature r||s"
            );
            // Same recovery id, whichever form (0/1 or 27/28) the library writes.
            let their_v = if theirs[64] >= 27 {
                theirs[64] - 27
            } else {
                theirs[64]
            };
            assert_eq!(signed.signature[64] - 27, their_v, "{generator} {name}: v");
            // We emit 27/28.
            assert!(matches!(signed.signature[64], 27 | 28));
            // Their signature, in their v form, is accepted and recovers the owner.
            let theirs_attached = unsigned.with_signature(&theirs).unwrap();
            assert_eq!(theirs_attached.signature, signed.signature);
            assert_eq!(tx::recover_signer(&signed.txid(), &theirs).unwrap(), owner);

            // The signed bytes parse back to the same raw_data and txID.
            let (parsed, txid) = tx::parse_signed_tx(&signed.to_bytes()).unwrap();
            assert_eq!(txid, signed.txid());
            assert_eq!(parsed.signature, vec![signed.signature.to_vec()]);
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * cases.len());
}

#[test]
fn tronweb_and_tronpy_agree_with_each_other() {
    let a = fixture("tronweb_vectors.json");
    let b = fixture("tronpy_vectors.json");
    assert!(str_of(&a, "generator").starts_with("tronweb "));
    assert!(str_of(&b, "generator").starts_with("tronpy "));
    for (x, y) in a["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .zip(b["vectors"].as_array().unwrap())
    {
        assert_eq!(x["name"], y["name"]);
        assert_eq!(
            str_of(x, "raw_data_hex").to_lowercase(),
            str_of(y, "raw_data_hex")
        );
        assert_eq!(str_of(x, "txid").to_lowercase(), str_of(y, "txid"));
        assert_eq!(
            str_of(x, "signature")[..128].to_lowercase(),
            str_of(y, "signature")[..128].to_lowercase()
        );
    }
}

#[tokio::test]
async fn addresses_derive_from_the_signer_and_round_trip() {
    let signer = LocalSigner::from_seed([9; 32]);
    let p = KeyPurpose::Wallet("wal_tron_1".into());
    let k1 = signer.public_key(&p, Curve::Secp256k1).await.unwrap();
    let k2 = signer.public_key(&p, Curve::Secp256k1).await.unwrap();
    let a1 = TronAddress::from_public_key(&k1.bytes).unwrap();
    // Same purpose, same address.
    assert_eq!(a1, TronAddress::from_public_key(&k2.bytes).unwrap());
    // Compressed and uncompressed forms of one key give one address.
    use k256::elliptic_curve::sec1::ToEncodedPoint;
    let uncompressed = k256::PublicKey::from_sec1_bytes(&k1.bytes)
        .unwrap()
        .to_encoded_point(false);
    assert_eq!(
        a1,
        TronAddress::from_public_key(uncompressed.as_bytes()).unwrap()
    );
    let other = signer
        .public_key(&KeyPurpose::Wallet("wal_tron_2".into()), Curve::Secp256k1)
        .await
        .unwrap();
    assert_ne!(a1, TronAddress::from_public_key(&other.bytes).unwrap());

    let text = a1.to_base58();
    assert!(text.starts_with('T'));
    assert_eq!(text.len(), 34);
    assert_eq!(TronAddress::parse(&text).unwrap(), a1);
    assert_eq!(TronAddress::parse(&a1.to_hex()).unwrap(), a1);
    assert_eq!(TronAddress::from_evm_bytes(&a1.evm_bytes()), a1);

    // Many keys round-trip.
    for i in 0..50 {
        let k = signer
            .public_key(
                &KeyPurpose::EscrowDeal(format!("deal{i}")),
                Curve::Secp256k1,
            )
            .await
            .unwrap();
        let a = TronAddress::from_public_key(&k.bytes).unwrap();
        assert_eq!(a.to_base58().parse::<TronAddress>().unwrap(), a);
    }
}

#[test]
fn vector_owner_matches_both_libraries_derivation() {
    // The owner tronweb and tronpy derived from the fixed private key is ours too.
    let inputs = fixture("inputs.json");
    let key =
        k256::ecdsa::SigningKey::from_slice(&hex::decode(str_of(&inputs, "private_key")).unwrap())
            .unwrap();
    let ours = TronAddress::from_public_key(key.verifying_key().to_encoded_point(false).as_bytes())
        .unwrap();
    for generator in ["tronweb_vectors.json", "tronpy_vectors.json"] {
        let doc = fixture(generator);
        assert_eq!(str_of(&doc["vectors"][0], "owner"), ours.to_base58());
    }
}

#[test]
fn malformed_addresses_are_rejected_with_clear_codes() {
    let good = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
    let code = |s: &str| TronAddress::parse(s).unwrap_err().code();

    assert_eq!(code(""), "TRON_ADDRESS_EMPTY");
    // Last character changed: checksum fails.
    assert_eq!(
        code("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u"),
        "TRON_ADDRESS_BAD_CHECKSUM"
    );
    // '0', 'O', 'I', 'l' are not base58.
    assert_eq!(
        code("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj60"),
        "TRON_ADDRESS_INVALID_CHARACTER"
    );
    // Truncated / extended.
    assert_eq!(code(&good[..30]), "TRON_ADDRESS_WRONG_LENGTH");
    assert_eq!(code(&format!("{good}1")), "TRON_ADDRESS_WRONG_LENGTH");
    // A valid Base58Check of 21 bytes with the wrong prefix (a Bitcoin-style 0x00).
    let mut payload = vec![0x00u8];
    payload.extend_from_slice(&[7u8; 20]);
    let wrong_prefix = bs58::encode(&payload).with_check().into_string();
    assert_eq!(code(&wrong_prefix), "TRON_ADDRESS_WRONG_PREFIX");
    // A valid Base58Check of 20 bytes (an EVM address without prefix).
    let short = bs58::encode(&[0x41u8; 20]).with_check().into_string();
    assert_eq!(code(&short), "TRON_ADDRESS_WRONG_LENGTH");
    // Hex form with the wrong prefix.
    assert_eq!(
        code("42a614f803b6fd780986a42c78ec9c7f77e6ded13c"),
        "TRON_ADDRESS_WRONG_PREFIX"
    );
    // An EVM 0x address is not a TRON address.
    assert_eq!(
        code("0xa614f803b6fd780986a42c78ec9c7f77e6ded13c"),
        "TRON_ADDRESS_INVALID_CHARACTER"
    );
    // Not a SEC1 public key (bad tag byte).
    assert_eq!(
        TronAddress::from_public_key(&[5u8; 33]).unwrap_err().code(),
        "TRON_INVALID_PUBLIC_KEY"
    );
    assert!(TronAddress::parse(good).is_ok());
}

#[test]
fn txid_is_sha256_of_raw_data_and_header_comes_from_block_id() {
    let mut block_id = [0u8; 32];
    block_id[..8].copy_from_slice(&70_000_000u64.to_be_bytes());
    for (i, b) in block_id[8..].iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let h = TxHeader::from_block_id(&block_id, 1_767_225_600_000, 60_000);
    assert_eq!(h.ref_block_bytes, [block_id[6], block_id[7]]);
    assert_eq!(h.ref_block_hash, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(h.expiration_ms, 1_767_225_660_000);
    let owner = TronAddress::parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap();
    let u = tx::build_trx_transfer(&h, &owner, &owner, 1).unwrap();
    use sha2::Digest;
    assert_eq!(u.txid.to_vec(), sha2::Sha256::digest(&u.raw_bytes).to_vec());
    assert_eq!(tx::parse_raw_data(&u.raw_bytes).unwrap(), u.raw);
    assert_eq!(
        tx::build_trx_transfer(&h, &owner, &owner, u64::MAX)
            .unwrap_err()
            .code(),
        "TRON_AMOUNT_TOO_LARGE"
    );
}
