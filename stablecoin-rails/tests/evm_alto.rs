//! The EVM rail with an external ERC-4337 bundler: [`RpcBundler`] over Alto
//! (`@pimlico/alto@0.0.20`, installed by `scripts/evm/install_tools.sh` with its RPC server
//! pinned to 127.0.0.1) on Anvil, with EntryPoint v0.8 at its canonical address (deployed
//! through the deterministic CREATE2 deployer with the published salt), the service's
//! VerifyingPaymaster and SimpleAccountFactory as in `tests/evm_anvil.rs`.
//!
//! Every test starts its own Anvil (chain id 8453, Base: on Polygon's 137 Alto asks
//! Polygon's public gas station for prices) and Alto (`--safe-mode false`); both stop when
//! the test ends. Without them every test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL` is
//! set (as `scripts/test` does).
#![cfg(feature = "evm-test")]

use serde_json::{Value, json};
use stablecoin_core::domain::fees::{TenantPricing, split_fees};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    Curve, KeyPurpose, LegRole, Rail, RailError, ReadinessStatus, Signer,
};
use stablecoin_rails::evm::abi::keccak;
use stablecoin_rails::evm::rpc::hex0x;
use stablecoin_rails::evm::testkit::{
    Alto, Anvil, ENTRY_POINT_V08, World, alto_or_skip, confirmed_tx, rail_with_bundler, wallet,
};
use stablecoin_rails::evm::userop::{
    Call, Nonce, Sponsorship, UserOp, erc20_transfer_call, execute_batch_call,
};
use stablecoin_rails::evm::{
    BundleError, Bundler, BundlerView, EvmAddress, EvmRail, JsonRpc, RpcBundler,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

macro_rules! require_alto {
    () => {
        if !alto_or_skip() {
            return;
        }
    };
}

/// Base's chain id. Not Polygon's 137: on 137 Alto prices gas from Polygon's public gas
/// station (an HTTPS request off the machine, and mainnet prices on a machine that
/// reaches it).
const CHAIN: u64 = 8453;

/// An Anvil of its own, the contracts with the EntryPoint at its canonical address, Alto
/// over them, and the RPC bundler of that Alto.
async fn setup(seed: u8) -> (Anvil, World, Alto, Arc<RpcBundler>) {
    let anvil = Anvil::start(CHAIN, true);
    let signer = Arc::new(LocalSigner::from_seed([seed; 32]));
    let w = World::deploy_canonical(&anvil.url, CHAIN, signer, |_| {}).await;
    assert_eq!(w.config.entry_point, ENTRY_POINT_V08);
    let alto = Alto::start(&w.node, &anvil.url).await;
    let bundler = Arc::new(RpcBundler::http(
        &alto.url,
        ENTRY_POINT_V08,
        Duration::from_secs(10),
    ));
    (anvil, w, alto, bundler)
}

fn rail(w: &World, bundler: Arc<dyn Bundler>) -> EvmRail {
    rail_with_bundler(&w.config, w.node.rpc.clone(), w.signer.clone(), bundler)
}

/// The bundle transaction `tx`: successful, sent to the EntryPoint by Alto's executor
/// (not by the service).
async fn assert_alto_bundle(w: &World, alto: &Alto, tx: &str) -> Value {
    let t = w
        .node
        .rpc
        .request("eth_getTransactionByHash", json!([tx]))
        .await
        .expect("transaction");
    assert_eq!(t["from"], json!(alto.executor.to_hex()), "sent by Alto");
    assert_eq!(t["to"], json!(ENTRY_POINT_V08.to_hex()));
    let r = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([tx]))
        .await
        .expect("receipt");
    assert_eq!(r["status"], "0x1");
    r
}

fn count_topic(receipt: &Value, topic: &[u8]) -> usize {
    let t = json!(hex0x(&keccak(topic)));
    receipt["logs"]
        .as_array()
        .expect("logs")
        .iter()
        .filter(|l| l["topics"][0] == t)
        .count()
}

/// Whether anything listens on `port` beyond 127.0.0.1, from /proc/net/tcp{,6}: the
/// local addresses of its LISTEN sockets.
fn listeners(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(table) = std::fs::read_to_string(f) else {
            continue;
        };
        for line in table.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 3 && cols[3] == "0A" && cols[1].ends_with(&format!(":{port:04X}")) {
                out.push(cols[1].to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn alto_settles_funding_and_a_send_with_fees_under_the_real_bundle_hash() {
    require_alto!();
    let (_anvil, w, alto, bundler) = setup(71).await;
    // Alto listens on loopback only (the install script's pin).
    let l = listeners(alto.port);
    assert!(
        !l.is_empty(),
        "nothing listens on Alto's port {}",
        alto.port
    );
    assert!(
        l.iter()
            .all(|a| a == &format!("0100007F:{:04X}", alto.port)),
        "Alto listens beyond 127.0.0.1: {l:?}"
    );
    assert_eq!(
        bundler.supported_entry_points().await.unwrap(),
        vec![ENTRY_POINT_V08]
    );
    let rail = rail(&w, bundler.clone());
    assert_eq!(rail.readiness().await.status, ReadinessStatus::Ready);

    let treasury = w.account(&KeyPurpose::Treasury).await;
    let alice_p = wallet("alto_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("alto_bob")).await;
    let fees = w.account(&KeyPurpose::ServiceFees).await;
    let tenant = w.account(&KeyPurpose::Wallet("alto_tenant".into())).await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await;

    // Funding, deploying the treasury account on the way: Alto answers the user-op hash,
    // so no bundle hash is known at submission.
    let fund = w
        .payment(
            "alto_fund",
            &KeyPurpose::Treasury,
            vec![(alice, 250_000_000, LegRole::Recipient)],
        )
        .await;
    let sub = rail.submit(&fund).await.expect("submit funding");
    assert_eq!(sub.tx_hash, None);
    let fund_tx = confirmed_tx(&w.settle(&rail, "alto_fund").await);
    assert_alto_bundle(&w, &alto, &fund_tx).await;
    let s = rail.submitted("alto_fund").unwrap();
    assert_eq!(s.tx_hash.map(|t| hex0x(&t)), Some(fund_tx.clone()));
    // Alto's own receipt agrees on the bundle.
    let r = bundler.receipt(&s.user_op_hash).await.unwrap().unwrap();
    assert!(r.success);
    assert_eq!(hex0x(&r.tx_hash), fund_tx);
    assert_eq!(w.usdc_of(&alice).await, w.base(250_000_000));

    // A send with both fees: three legs in one operation of one Alto bundle.
    let split = split_fees(
        Micros(100_000_000),
        &TenantPricing::Percentage {
            fee_bps: 100,
            fee_cap_micros: 0,
        },
    )
    .unwrap();
    let p2p = w
        .payment(
            "alto_p2p",
            &alice_p,
            vec![
                (bob, split.recipient.0, LegRole::Recipient),
                (fees, split.service_fee.0, LegRole::ServiceFee),
                (tenant, split.tenant_fee.0, LegRole::TenantFee),
            ],
        )
        .await;
    rail.submit(&p2p).await.expect("submit p2p");
    let tx = confirmed_tx(&w.settle(&rail, "alto_p2p").await);
    assert_ne!(tx, fund_tx);
    let receipt = assert_alto_bundle(&w, &alto, &tx).await;
    assert_eq!(
        count_topic(&receipt, b"Transfer(address,address,uint256)"),
        3
    );
    // Resubmitting the settled payment answers its bundle and sends nothing.
    let again = rail.submit(&p2p).await.expect("resubmit");
    assert_eq!(again.tx_hash.as_deref(), Some(tx.as_str()));
    assert_eq!(w.usdc_of(&alice).await, w.base(150_000_000));
    assert_eq!(w.usdc_of(&bob).await, w.base(98_700_000));
    assert_eq!(w.usdc_of(&fees).await, w.base(300_000));
    assert_eq!(w.usdc_of(&tenant).await, w.base(1_000_000));
    assert_eq!(w.usdc_of(&treasury).await, w.base(750_000_000));
    // Sponsored: no account held native coin.
    for a in [treasury, alice, bob, fees, tenant] {
        assert_eq!(w.node.native_balance(&a).await, 0, "{a}");
    }

    // Alto estimates a signed, sponsored operation of alice's (now deployed) account.
    let op = signed_op(&w, &alice_p, alice, bob).await;
    let e = bundler
        .estimate(&op)
        .await
        .expect("eth_estimateUserOperationGas");
    assert!(
        e.call_gas_limit > 0 && e.verification_gas_limit > 0,
        "{e:?}"
    );
    assert!(e.pre_verification_gas > 0, "{e:?}");
    assert!(
        e.paymaster_verification_gas_limit.is_some_and(|g| g > 0),
        "{e:?}"
    );
}

/// A 65-byte signature of `digest` by `signer`'s key `p`, v = 27/28.
async fn sign(w: &World, p: &KeyPurpose, digest: &[u8; 32]) -> Vec<u8> {
    let mut sig = w
        .signer
        .sign(p, Curve::Secp256k1, digest)
        .await
        .expect("sign")
        .0;
    if sig[64] < 27 {
        sig[64] += 27;
    }
    sig
}

/// A 1-USDC transfer from `from`'s deployed account, sponsored and signed as the rail
/// does (never sent).
async fn signed_op(w: &World, p: &KeyPurpose, from: EvmAddress, to: EvmAddress) -> UserOp {
    let g = w.config.gas;
    let mut op = UserOp {
        sender: from,
        nonce: Nonce {
            key: Nonce::key_for("alto_estimate"),
            seq: 0,
        },
        init_code: Vec::new(),
        call_data: execute_batch_call(&[Call {
            target: w.usdc,
            data: erc20_transfer_call(&to, w.base(1_000_000)),
        }]),
        verification_gas_limit: g.verification_gas,
        call_gas_limit: g.call_gas_base + g.call_gas_per_transfer,
        pre_verification_gas: g.pre_verification_gas,
        max_priority_fee_per_gas: 1_000_000_000,
        max_fee_per_gas: 10_000_000_000,
        paymaster_and_data: Vec::new(),
        signature: Vec::new(),
    };
    let sponsorship = Sponsorship {
        paymaster: w.config.paymaster,
        verification_gas_limit: g.paymaster_verification_gas,
        post_op_gas_limit: 0,
        valid_until: 0,
        valid_after: 0,
    };
    let digest = op.paymaster_digest(&sponsorship, CHAIN);
    op.paymaster_and_data = sponsorship.encode(&sign(w, &KeyPurpose::Sponsor, &digest).await);
    let hash = op.hash(&w.config.entry_point, CHAIN);
    op.signature = sign(w, p, &hash).await;
    op
}

/// Hands the operation to Alto, then loses Alto's answer.
struct LostAnswer {
    inner: Arc<RpcBundler>,
    sends: AtomicUsize,
}

#[async_trait::async_trait]
impl Bundler for LostAnswer {
    async fn send(&self, ops: &[UserOp]) -> Result<Option<[u8; 32]>, BundleError> {
        self.sends.fetch_add(1, Ordering::SeqCst);
        self.inner.send(ops).await?;
        Err(BundleError::Unknown {
            tx_hash: None,
            reason: "connection reset after the request was sent".into(),
        })
    }

    async fn account(&self) -> Option<EvmAddress> {
        None
    }

    fn accepts_before_bundling(&self) -> bool {
        true
    }

    async fn view(&self, user_op_hash: &[u8; 32]) -> BundlerView {
        self.inner.view(user_op_hash).await
    }
}

#[tokio::test]
async fn a_lost_alto_answer_is_reconciled_by_user_op_hash_without_a_second_send() {
    require_alto!();
    let (_anvil, w, alto, bundler) = setup(72).await;
    let lossy = Arc::new(LostAnswer {
        inner: bundler.clone(),
        sends: AtomicUsize::new(0),
    });
    let rail = rail(&w, lossy.clone());
    let alice_p = wallet("alto_lost");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("alto_lost_bob")).await;
    w.mint(w.usdc, &alice, 20_000_000).await;
    let p = w
        .payment(
            "alto_lost",
            &alice_p,
            vec![(bob, 5_000_000, LegRole::Recipient)],
        )
        .await;
    match rail.submit(&p).await {
        Err(RailError::Unknown { .. }) => {}
        other => panic!("expected SUBMISSION_UNKNOWN, got {other:?}"),
    }
    // Asking again sends nothing: the journal holds the operation's hash.
    assert!(rail.submit(&p).await.is_ok());
    let tx = confirmed_tx(&w.settle(&rail, "alto_lost").await);
    assert_eq!(lossy.sends.load(Ordering::SeqCst), 1, "exactly one send");
    let receipt = assert_alto_bundle(&w, &alto, &tx).await;
    let s = rail.submitted("alto_lost").unwrap();
    assert_eq!(s.tx_hash.map(|t| hex0x(&t)), Some(tx.clone()));
    // Exactly one transfer, once: one event for the operation on the whole chain.
    assert_eq!(
        count_topic(&receipt, b"Transfer(address,address,uint256)"),
        1
    );
    let events = w
        .node
        .rpc
        .request(
            "eth_getLogs",
            json!([{
                "fromBlock": "0x0",
                "toBlock": "latest",
                "address": ENTRY_POINT_V08.to_hex(),
                "topics": [
                    hex0x(&keccak(b"UserOperationEvent(bytes32,address,address,uint256,bool,uint256,uint256)")),
                    hex0x(&s.user_op_hash),
                ],
            }]),
        )
        .await
        .unwrap();
    assert_eq!(events.as_array().unwrap().len(), 1);
    assert_eq!(w.usdc_of(&bob).await, w.base(5_000_000));
    assert_eq!(w.usdc_of(&alice).await, w.base(15_000_000));
}

/// Sends `n` one-leg transfers from 20 accounts (deployed by a warm-up transfer each,
/// not timed) through `rail`, then polls each until Confirmed; transfers per second.
async fn transfers_per_sec(w: &World, rail: &EvmRail, tag: &str, n: usize) -> f64 {
    let senders = 20.min(n.max(1));
    let mut from = Vec::new();
    let to = w.account(&wallet(&format!("{tag}_to"))).await;
    for s in 0..senders {
        let p = wallet(&format!("{tag}_{s}"));
        let a = w.account(&p).await;
        w.mint(w.usdc, &a, 1_000_000_000).await;
        let warm = w
            .payment(
                &format!("{tag}_warm_{s}"),
                &p,
                vec![(to, 1, LegRole::Recipient)],
            )
            .await;
        rail.submit(&warm).await.expect("warm-up submit");
        from.push(p);
    }
    for s in 0..senders {
        confirmed_tx(&w.settle(rail, &format!("{tag}_warm_{s}")).await);
    }
    let before = w.usdc_of(&to).await;
    let started = std::time::Instant::now();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("{tag}_op_{i}");
        let p = w
            .payment(
                &id,
                &from[i % senders],
                vec![(to, 1_000_000, LegRole::Recipient)],
            )
            .await;
        rail.submit(&p).await.expect("submit");
        ids.push(id);
    }
    for id in &ids {
        confirmed_tx(&w.settle(rail, id).await);
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(
        w.usdc_of(&to).await - before,
        w.base(1_000_000 * n as u64),
        "every transfer arrived, once"
    );
    n as f64 / secs
}

/// BENCHMARKS.md, "EVM rail": transfers settled per second through Alto, beside the
/// self-bundled rate on the same kind of Anvil in the same run.
/// `cargo test -p stablecoin-rails --features evm-test --test integration -- evm_alto:: --ignored
/// --nocapture` (env `EVM_BENCH_TRANSFERS`, default 300).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run on purpose"]
async fn bench_transfers_settled_through_alto() {
    require_alto!();
    let n = std::env::var("EVM_BENCH_TRANSFERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let (_anvil, w, _alto, bundler) = setup(73).await;
    let through_alto = transfers_per_sec(&w, &rail(&w, bundler), "alto_bench", n).await;
    let own = Anvil::start(CHAIN, true);
    let w2 = World::deploy(&own.url, CHAIN, true, |_| {}).await;
    let self_bundled = transfers_per_sec(&w2, &w2.rail, "self_bench", n).await;
    println!(
        "transfers settled on Anvil, {n} from 20 accounts: through Alto {through_alto:.1}/s, \
         self-bundled {self_bundled:.1}/s"
    );
}
