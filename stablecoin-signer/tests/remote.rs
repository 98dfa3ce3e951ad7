//! The remote signer against the real signing service on a loopback port: the same keys
//! and valid signatures as the local signer, authentication, error mapping, and an
//! engine flow on the simulated EVM chain with keys held only by the service; and the
//! key derivation written in docs/signer-protocol.md.

use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha512};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::otp::CodeKey;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, FundRequest, Ports, SendRequest};
use stablecoin_core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin_core::ports::{Curve, KeyPurpose, Rail, RailId, Signer, SignerError};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use stablecoin_signer::RemoteSigner;
use stablecoin_signer::protocol::{
    AuthKey, DERIVE_KEY_PATH, OTP_CODE_KEY_LABEL, SIGN_PATH, SIGNATURE_HEADER, TIMESTAMP_HEADER,
    WEBHOOK_SECRET_KEY_LABEL,
};
use stablecoin_signer::service::{Running, SignerService, spawn_on_loopback};
use std::sync::Arc;
use std::time::Duration;

const SEED: [u8; 32] = [0x42; 32];
const TOKEN: &str = "a-shared-token-of-at-least-32-characters";

/// The service on 127.0.0.1:<free port>; it stops when the returned handle drops.
async fn start_service() -> (String, Running) {
    let running = spawn_on_loopback(SignerService::new(SEED, TOKEN).unwrap())
        .await
        .unwrap();
    (running.url.clone(), running)
}

fn remote(url: &str, token: &str) -> RemoteSigner {
    RemoteSigner::new(url, token, Duration::from_secs(5)).unwrap()
}

fn purposes() -> Vec<KeyPurpose> {
    vec![
        KeyPurpose::Wallet("wal_1".into()),
        KeyPurpose::PhoneWallet("+2250700000001".into()),
        KeyPurpose::EscrowDeal("esc_1".into()),
        KeyPurpose::Treasury,
        KeyPurpose::Sponsor,
        KeyPurpose::ServiceFees,
    ]
}

#[tokio::test]
async fn the_remote_signer_gives_the_local_keys_and_valid_signatures_for_every_purpose() {
    use ed25519_dalek::Verifier as _;
    use k256::ecdsa::signature::hazmat::PrehashVerifier as _;
    let (url, _stop) = start_service().await;
    let r = remote(&url, TOKEN);
    let local = LocalSigner::from_seed(SEED);
    let digest = [0x5a; 32];
    let message = b"a solana message of any length";
    for p in purposes() {
        for curve in [Curve::Secp256k1, Curve::Ed25519] {
            let key = r.public_key(&p, curve).await.unwrap();
            assert_eq!(
                key,
                local.public_key(&p, curve).await.unwrap(),
                "{p} {curve:?}"
            );
            // Served from the cache the second time: still the same.
            assert_eq!(key, r.public_key(&p, curve).await.unwrap());
        }
        let pk = r.public_key(&p, Curve::Secp256k1).await.unwrap();
        let sig = r.sign(&p, Curve::Secp256k1, &digest).await.unwrap();
        assert_eq!(sig.0.len(), 65);
        let vk = k256::ecdsa::VerifyingKey::from_sec1_bytes(&pk.bytes).unwrap();
        let s = k256::ecdsa::Signature::from_slice(&sig.0[..64]).unwrap();
        vk.verify_prehash(&digest, &s).unwrap();
        // v recovers the same key.
        let recid = k256::ecdsa::RecoveryId::from_byte(sig.0[64]).unwrap();
        let recovered =
            k256::ecdsa::VerifyingKey::recover_from_prehash(&digest, &s, recid).unwrap();
        assert_eq!(recovered, vk, "{p}");
        assert!(vk.verify_prehash(&[0x5b; 32], &s).is_err());

        let pk = r.public_key(&p, Curve::Ed25519).await.unwrap();
        let sig = r.sign(&p, Curve::Ed25519, message).await.unwrap();
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&pk.bytes.try_into().unwrap()).unwrap();
        let s = ed25519_dalek::Signature::from_bytes(&sig.0.try_into().unwrap());
        vk.verify(message, &s).unwrap();
        assert!(vk.verify(b"another message", &s).is_err());
    }
}

#[tokio::test]
async fn derived_keys_are_the_ones_a_process_holding_the_seed_derives() {
    let (url, _stop) = start_service().await;
    let r = remote(&url, TOKEN);
    let otp = r.derive_key(OTP_CODE_KEY_LABEL).await.unwrap();
    assert_eq!(CodeKey::new(otp), CodeKey::from_master_seed(&SEED));
    let webhook = r.derive_key(WEBHOOK_SECRET_KEY_LABEL).await.unwrap();
    assert_ne!(webhook, otp);
    assert_eq!(
        r.derive_key(WEBHOOK_SECRET_KEY_LABEL).await.unwrap(),
        webhook
    );
    match r.derive_key("stablecoin/anything-else").await {
        Err(SignerError::InvalidInput(m)) => assert!(m.contains("UNKNOWN_LABEL"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_token_is_refused() {
    let (url, _stop) = start_service().await;
    let wrong = remote(&url, "another-token-of-at-least-32-characters!");
    for curve in [Curve::Secp256k1, Curve::Ed25519] {
        match wrong.public_key(&KeyPurpose::Treasury, curve).await {
            Err(SignerError::Unavailable(m)) => assert!(m.contains("credentials"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    assert!(matches!(
        wrong.derive_key(OTP_CODE_KEY_LABEL).await,
        Err(SignerError::Unavailable(_))
    ));
}

/// A raw request: what a client without the token, or an old one, gets.
async fn raw(url: &str, path: &str, ts: u64, sig: &str, body: &str) -> (u16, serde_json::Value) {
    let resp = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header(TIMESTAMP_HEADER, ts.to_string())
        .header(SIGNATURE_HEADER, sig)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (
        status,
        serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap(),
    )
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn unsigned_stale_and_malformed_requests_get_stable_codes() {
    let (url, _stop) = start_service().await;
    let key = AuthKey::from_token(TOKEN).unwrap();
    let body = r#"{"purpose":"service/treasury","curve":"secp256k1","payload_hex":"00"}"#;
    let code = |v: &serde_json::Value| v["error"]["code"].as_str().unwrap().to_string();

    let (s, v) = raw(&url, SIGN_PATH, now(), "00", body).await;
    assert_eq!((s, code(&v).as_str()), (401, "UNAUTHORIZED"));
    // A valid signature from long ago (a replay) is refused.
    let old = now() - 3600;
    let (s, v) = raw(
        &url,
        SIGN_PATH,
        old,
        &key.sign_request(old, SIGN_PATH, body.as_bytes()),
        body,
    )
    .await;
    assert_eq!((s, code(&v).as_str()), (401, "UNAUTHORIZED"));
    // A signature for another path does not authorize this one.
    let t = now();
    let (s, _) = raw(
        &url,
        SIGN_PATH,
        t,
        &key.sign_request(t, DERIVE_KEY_PATH, body.as_bytes()),
        body,
    )
    .await;
    assert_eq!(s, 401);

    let signed = |path: &'static str, body: &'static str| {
        let t = now();
        (t, key.sign_request(t, path, body.as_bytes()))
    };
    let (t, sig) = signed(SIGN_PATH, body);
    let (s, v) = raw(&url, SIGN_PATH, t, &sig, body).await;
    assert_eq!((s, code(&v).as_str()), (400, "INVALID_INPUT"), "{v}");
    for bad in [
        "not json",
        r#"{"purpose":"service/treasury","curve":"secp256k1"}"#,
        r#"{"purpose":"service/treasury","curve":"p256","payload_hex":"00"}"#,
        r#"{"purpose":"nowhere/x","curve":"ed25519","payload_hex":"00"}"#,
        r#"{"purpose":"service/treasury","curve":"ed25519","payload_hex":"0g"}"#,
        r#"{"purpose":"service/treasury","curve":"ed25519","payload_hex":"00","extra":1}"#,
    ] {
        let (t, sig) = signed(SIGN_PATH, bad);
        let (s, v) = raw(&url, SIGN_PATH, t, &sig, bad).await;
        assert_eq!(
            (s, code(&v).as_str()),
            (400, "INVALID_REQUEST"),
            "{bad}: {v}"
        );
    }
    let (t, sig) = signed("/v1/nothing", "{}");
    let (s, v) = raw(&url, "/v1/nothing", t, &sig, "{}").await;
    assert_eq!((s, code(&v).as_str()), (404, "NOT_FOUND"));
}

#[tokio::test]
async fn a_malformed_payload_is_invalid_input() {
    let (url, _stop) = start_service().await;
    let r = remote(&url, TOKEN);
    for len in [0, 31, 33] {
        match r
            .sign(&KeyPurpose::Treasury, Curve::Secp256k1, &vec![1; len])
            .await
        {
            Err(SignerError::InvalidInput(m)) => assert!(m.contains("INVALID_INPUT"), "{m}"),
            other => panic!("{len}: {other:?}"),
        }
    }
    // Larger than the service reads.
    let huge = vec![0u8; stablecoin_signer::protocol::MAX_BODY_BYTES];
    assert!(matches!(
        r.sign(&KeyPurpose::Treasury, Curve::Ed25519, &huge).await,
        Err(SignerError::InvalidInput(_))
    ));
}

#[tokio::test]
async fn the_service_down_or_silent_is_unavailable() {
    // Nothing listens on the port any more.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let r = remote(&url, TOKEN);
    assert!(matches!(
        r.public_key(&KeyPurpose::Treasury, Curve::Secp256k1).await,
        Err(SignerError::Unavailable(_))
    ));

    // A service that accepts and never answers: the timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = silent.accept().await {
            conns.push(c);
        }
    });
    let r = RemoteSigner::new(&url, TOKEN, Duration::from_millis(300)).unwrap();
    // A hang guard, not a stopwatch: the call ends on its own with the client's timeout.
    let answer = tokio::time::timeout(
        Duration::from_secs(30),
        r.sign(&KeyPurpose::Treasury, Curve::Secp256k1, &[0; 32]),
    )
    .await
    .expect("the client gave up on the silent service");
    assert!(
        matches!(answer, Err(SignerError::Unavailable(_))),
        "{answer:?}"
    );
    held.abort();
}

#[tokio::test]
async fn an_answer_that_is_not_authenticated_is_unavailable() {
    // Something else answers on the signer's address, with a well-formed key but
    // without the service's response signature.
    let router = axum::Router::new().fallback(|| async {
        axum::Json(serde_json::json!({"curve": "secp256k1", "public_key_hex": "02".repeat(33)}))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, router).await });
    let r = remote(&url, TOKEN);
    match r.public_key(&KeyPurpose::Treasury, Curve::Secp256k1).await {
        Err(SignerError::Unavailable(m)) => assert!(m.contains("unauthenticated"), "{m}"),
        other => panic!("{other:?}"),
    }
    task.abort();
}

#[tokio::test]
async fn an_engine_with_the_remote_signer_funds_and_settles_a_transfer_on_the_simulated_evm_chain()
{
    let (url, _stop) = start_service().await;
    let signer: Arc<dyn Signer> = Arc::new(remote(&url, TOKEN));
    let store = Arc::new(MemoryStore::new());
    let evm = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig::for_profile(SimProfile::Evm(137)),
    ));
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer: signer.clone(),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600))),
        entropy: Arc::new(SeededEntropy::new(11)),
    };
    let config = EngineConfig {
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        ..Default::default()
    };
    let engine = Engine::new(ports, vec![evm.clone()], config);
    let m = |s: &str| Micros::parse_decimal(s).unwrap();
    let settle = || async {
        let r = engine.settle_all(100).await;
        assert!(r.errors.is_empty(), "worker errors: {:?}", r.errors);
    };

    let t = engine.create_tenant("Acme").await.unwrap().id;
    let treasury = evm.address_for(&KeyPurpose::Treasury).await.unwrap();
    // The treasury's address is the local signer's: the keys are the seed's.
    let local_evm = SimRail::new(
        SimProfile::Evm(137),
        Arc::new(LocalSigner::from_seed(SEED)),
        SimConfig::for_profile(SimProfile::Evm(137)),
    );
    assert_eq!(
        treasury,
        local_evm.address_for(&KeyPurpose::Treasury).await.unwrap()
    );
    evm.mint(&treasury, Token::Usdc, m("100")).unwrap();
    evm.mine(1);
    engine
        .credit_treasury(&t, Token::Usdc, m("100"), "wire-1")
        .await
        .unwrap();
    let (a, b) = (
        Phone::parse("+2250700000001").unwrap(),
        Phone::parse("+2250700000002").unwrap(),
    );
    engine.provision(&t, &a).await.unwrap();
    engine.provision(&t, &b).await.unwrap();
    let fund = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("50"),
    };
    let funding = engine.fund(&t, &fund, None).await.unwrap();
    settle().await;
    assert_eq!(
        engine
            .balance_on(&t, &a, RailId::Evm(137))
            .await
            .unwrap()
            .of(Token::Usdc),
        m("50")
    );
    let send = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:12.5".into(),
    };
    let sent = engine.send(&t, &send, Some("k1")).await.unwrap();
    settle().await;
    // The recipient gets the amount less the service fee.
    let received = engine
        .balance_on(&t, &b, RailId::Evm(137))
        .await
        .unwrap()
        .of(Token::Usdc);
    assert!(received > m("12") && received <= m("12.5"), "{received:?}");
    assert_eq!(
        engine
            .balance_on(&t, &a, RailId::Evm(137))
            .await
            .unwrap()
            .of(Token::Usdc),
        m("37.5")
    );
    for id in [funding.id.as_str(), sent.id.as_str()] {
        let op = engine.operation(&t, id).await.unwrap();
        assert_eq!(op.status.as_str(), "SETTLED", "{id}");
    }
}

fn documented(seed: &[u8; 32], msg: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(seed).unwrap();
    mac.update(msg.as_bytes());
    mac.finalize().into_bytes()[..32].try_into().unwrap()
}

#[tokio::test]
/// The derivation written in docs/signer-protocol.md is the one the signer uses: a KMS
/// adapter or an auditor following the document gets the same keys.
async fn keys_follow_the_documented_derivation() {
    let seed = [0x42; 32];
    let local = LocalSigner::from_seed(seed);
    for p in purposes() {
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

#[test]
fn debug_output_never_shows_the_token_or_the_seed() {
    let r = remote("http://127.0.0.1:1", TOKEN);
    let service = SignerService::new(SEED, TOKEN).unwrap();
    let key = AuthKey::from_token(TOKEN).unwrap();
    for shown in [format!("{r:?}"), format!("{service:?}"), format!("{key:?}")] {
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(!shown.contains("4242"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }
}
