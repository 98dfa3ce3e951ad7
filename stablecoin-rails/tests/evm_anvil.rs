//! The EVM rail on a real node: Anvil (npm `@foundry-rs/anvil-linux-amd64`, installed by
//! `scripts/evm/install_tools.sh`) running EntryPoint v0.8 and SimpleAccountFactory from
//! `@account-abstraction/contracts@0.8.0`, the service's VerifyingPaymaster and test
//! tokens with 6 and 18 decimals (`tests/fixtures/evm/contracts.json`, rebuilt by
//! `scripts/evm/build_artifacts.sh`).
//!
//! One Anvil per chain id per test binary (137 and 56), shared by the tests; every test
//! deploys its own contracts and uses its own keys, so they run in parallel. The test of
//! concurrent operations starts its own Anvil with automining off. Anvil is started
//! under `sh`, which kills it when this process's end closes its stdin: nothing outlives
//! the test binary.
//!
//! Without an anvil binary every test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set (as `scripts/test` does), which turns that into a failure.
#![cfg(feature = "evm-test")]

use serde_json::{Value, json};
use stablecoin_core::domain::fees::{FeeSplit, TenantPricing, split_fees};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{MemoryStore, SystemClock};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, Rail, RailError, ReadinessStatus, StoreJournal,
    SubmissionStatus,
};
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::rpc::hex0x;
use stablecoin_rails::evm::testkit::{
    Anvil, ETH, World, anvil_or_skip, confirmed_tx, owner_of, rail_over, wallet,
};
use stablecoin_rails::evm::userop::{Nonce, Sponsorship, UserOp, personal_digest};
use stablecoin_rails::evm::{EvmAddress, EvmRail, HttpJsonRpc, JsonRpc, RpcError, SelfBundler};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

macro_rules! require_anvil {
    () => {
        if !anvil_or_skip() {
            return;
        }
    };
}

/// A payer (its key and account), a recipient, the service-fee and a tenant-fee account.
struct Parties {
    alice_p: KeyPurpose,
    alice: EvmAddress,
    bob: EvmAddress,
    fees: EvmAddress,
    tenant: EvmAddress,
}

impl Parties {
    async fn of(w: &World, payer: &str, recipient: &str, tenant: &str) -> Parties {
        let alice_p = wallet(payer);
        Parties {
            alice: w.account(&alice_p).await,
            alice_p,
            bob: w.account(&wallet(recipient)).await,
            fees: w.account(&KeyPurpose::ServiceFees).await,
            tenant: w.account(&KeyPurpose::Wallet(tenant.into())).await,
        }
    }
}

/// The legs of a transfer as the engine builds them from a fee split (recipient, service
/// fee, tenant fee; a zero leg moves nothing).
fn fee_legs(
    split: &FeeSplit,
    recipient: EvmAddress,
    fees: EvmAddress,
    tenant: EvmAddress,
) -> Vec<(EvmAddress, u64, LegRole)> {
    vec![
        (recipient, split.recipient.0, LegRole::Recipient),
        (fees, split.service_fee.0, LegRole::ServiceFee),
        (tenant, split.tenant_fee.0, LegRole::TenantFee),
    ]
}

// ---- tests ----------------------------------------------------------------------------

async fn provisioning_matches_the_contracts(chain_id: u64) {
    let w = World::on_shared(chain_id).await;
    let eth = w.node.eth();
    for p in [
        wallet("a"),
        wallet("b"),
        KeyPurpose::Treasury,
        KeyPurpose::EscrowDeal("d1".into()),
    ] {
        let owner = owner_of(&*w.signer, &p).await;
        let offline = w.rail.address_for(&p).await.expect("address_for");
        let on_chain = eth
            .call(
                &w.config.factory,
                &abi::call(
                    "getAddress(address,uint256)",
                    &[Abi::address(&owner.0), Abi::uint(0)],
                ),
            )
            .await
            .expect("getAddress");
        let on_chain =
            stablecoin_rails::evm::rpc::topic_address(&on_chain[..32].try_into().unwrap());
        assert_eq!(offline.0, on_chain.to_string(), "{p}");
        // Nothing was deployed and no gas spent to know it.
        assert!(eth.code(&on_chain).await.unwrap().is_empty());
    }
    // The user-operation hash and the paymaster hash agree with the contracts'.
    let op = UserOp {
        sender: w.account(&wallet("a")).await,
        nonce: Nonce {
            key: Nonce::key_for("op_1"),
            seq: 3,
        },
        init_code: vec![1, 2, 3],
        call_data: vec![4; 70],
        verification_gas_limit: 100_000,
        call_gas_limit: 200_000,
        pre_verification_gas: 50_000,
        max_priority_fee_per_gas: 1_000_000_000,
        max_fee_per_gas: 3_000_000_000,
        paymaster_and_data: Sponsorship {
            paymaster: w.config.paymaster,
            verification_gas_limit: 80_000,
            post_op_gas_limit: 0,
            valid_until: 0,
            valid_after: 0,
        }
        .encode(&[7; 65]),
        signature: vec![9; 65],
    };
    let theirs = eth
        .call(
            &w.config.entry_point,
            &abi::call(
                &format!(
                    "getUserOpHash({})",
                    stablecoin_rails::evm::userop::PACKED_USEROP_ABI
                ),
                &[op.to_abi()],
            ),
        )
        .await
        .expect("getUserOpHash");
    assert_eq!(
        hex0x(&theirs),
        hex0x(&op.hash(&w.config.entry_point, chain_id))
    );
    let sponsorship = Sponsorship {
        paymaster: w.config.paymaster,
        verification_gas_limit: 80_000,
        post_op_gas_limit: 0,
        valid_until: 0,
        valid_after: 0,
    };
    let pm_hash = eth
        .call(
            &w.config.paymaster,
            &abi::call(
                &format!(
                    "getHash({},uint48,uint48)",
                    stablecoin_rails::evm::userop::PACKED_USEROP_ABI
                ),
                &[op.to_abi(), Abi::uint(0), Abi::uint(0)],
            ),
        )
        .await
        .expect("getHash");
    assert_eq!(
        personal_digest(&pm_hash[..32].try_into().unwrap()),
        op.paymaster_digest(&sponsorship, chain_id)
    );
}

#[tokio::test]
async fn provisioning_is_offline_and_matches_the_factory_on_polygon() {
    require_anvil!();
    provisioning_matches_the_contracts(137).await;
}

#[tokio::test]
async fn provisioning_is_offline_and_matches_the_factory_on_bsc() {
    require_anvil!();
    provisioning_matches_the_contracts(56).await;
}

/// Funding (treasury -> wallet) and a P2P transfer with service and tenant fee as one
/// `executeBatch`; every balance checked to the base unit; no account ever holds gas.
async fn fund_and_transfer_with_fees(chain_id: u64) {
    let w = World::on_shared(chain_id).await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    let Parties {
        alice_p,
        alice,
        bob,
        fees,
        tenant,
    } = Parties::of(&w, "alice", "bob", "tenant_fees").await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await; // 1,000.000000

    // Funding: 250 USDC to alice (one leg), deploying the treasury account on the way.
    let fund = w
        .payment(
            "op_fund",
            &KeyPurpose::Treasury,
            vec![(alice, 250_000_000, LegRole::Recipient)],
        )
        .await;
    let sub = w.rail.submit(&fund).await.expect("submit funding");
    let fund_tx = confirmed_tx(&w.settle(&w.rail, "op_fund").await);
    assert_eq!(
        sub.tx_hash.as_deref(),
        Some(fund_tx.as_str()),
        "tx_hash is the bundle's"
    );
    let s = w.rail.submitted("op_fund").unwrap();
    assert_ne!(
        hex0x(&s.user_op_hash),
        fund_tx,
        "the user-op hash is kept apart"
    );
    assert_eq!(w.usdc_of(&alice).await, w.base(250_000_000));

    // Transfer 100 USDC: 0.30 service fee, tenant 1% = 1.00, recipient 98.70.
    let split = split_fees(
        Micros(100_000_000),
        &TenantPricing::Percentage {
            fee_bps: 100,
            fee_cap_micros: 0,
        },
    )
    .unwrap();
    assert_eq!(
        (split.recipient.0, split.service_fee.0, split.tenant_fee.0),
        (98_700_000, 300_000, 1_000_000)
    );
    let p2p = w
        .payment("op_p2p", &alice_p, fee_legs(&split, bob, fees, tenant))
        .await;
    w.rail.submit(&p2p).await.expect("submit p2p");
    // Idempotent by id: the same payment again sends nothing new.
    let again = w.rail.submit(&p2p).await.expect("resubmit");
    let tx = confirmed_tx(&w.settle(&w.rail, "op_p2p").await);
    assert_eq!(again.tx_hash.as_deref(), Some(tx.as_str()));
    assert_eq!(w.usdc_of(&alice).await, w.base(150_000_000));
    assert_eq!(w.usdc_of(&bob).await, w.base(98_700_000));
    assert_eq!(w.usdc_of(&fees).await, w.base(300_000));
    assert_eq!(w.usdc_of(&tenant).await, w.base(1_000_000));
    assert_eq!(w.usdc_of(&treasury).await, w.base(750_000_000));
    // The three legs are three Transfer logs of ONE transaction.
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([tx]))
        .await
        .unwrap();
    let transfer_topic = hex0x(&abi::keccak(b"Transfer(address,address,uint256)"));
    let transfers = receipt["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["topics"][0] == json!(transfer_topic))
        .count();
    assert_eq!(transfers, 3);
    // Live balance reads through the rail, in micro-units whatever the decimals.
    assert_eq!(
        w.rail
            .balance(&ChainAddress(bob.to_string()), Token::Usdc)
            .await
            .unwrap(),
        Micros(98_700_000)
    );
    assert_eq!(
        w.rail
            .balance(&ChainAddress(bob.to_string()), Token::Usdt)
            .await
            .unwrap(),
        Micros::ZERO
    );
    // All gas sponsored: no account ever held native coin.
    for a in [treasury, alice, bob, fees, tenant] {
        assert_eq!(w.node.native_balance(&a).await, 0, "{a}");
    }
    // A rail restarted without its journal finds the payment by its nonce key and sends
    // nothing.
    let fresh = rail_over(&w.config, w.node.rpc.clone(), w.signer.clone());
    let sub = fresh.submit(&p2p).await.expect("resubmit after restart");
    assert_eq!(sub.tx_hash.as_deref(), Some(tx.as_str()));
    assert_eq!(w.usdc_of(&bob).await, w.base(98_700_000));
    let _ = w.usdt;
}

#[tokio::test]
async fn fund_then_transfer_with_both_fees_in_one_bundle_on_polygon() {
    require_anvil!();
    fund_and_transfer_with_fees(137).await;
}

#[tokio::test]
async fn fund_then_transfer_with_both_fees_in_one_bundle_on_bsc_18_decimals() {
    require_anvil!();
    fund_and_transfer_with_fees(56).await;
}

#[tokio::test]
async fn a_transfer_too_small_for_both_fees_waives_the_tenant_fee() {
    require_anvil!();
    let w = World::on_shared(137).await;
    let Parties {
        alice_p,
        alice,
        bob,
        fees,
        tenant,
    } = Parties::of(&w, "small", "small_bob", "tenant_fees").await;
    w.mint(w.usdc, &alice, 10_000_000).await;
    // 1.00 with a flat 1.00 tenant fee: the fee would leave the recipient nothing.
    let split = split_fees(
        Micros(1_000_000),
        &TenantPricing::Flat {
            fee_flat_micros: 1_000_000,
        },
    )
    .unwrap();
    assert!(split.tenant_fee_waived);
    let p = w
        .payment("op_small", &alice_p, fee_legs(&split, bob, fees, tenant))
        .await;
    w.rail.submit(&p).await.expect("submit");
    confirmed_tx(&w.settle(&w.rail, "op_small").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(997_000));
    assert_eq!(w.usdc_of(&fees).await, w.base(3_000));
    assert_eq!(w.usdc_of(&tenant).await, 0);
    assert_eq!(w.usdc_of(&alice).await, w.base(9_000_000));
}

#[tokio::test]
async fn a_reverted_call_leaves_no_partial_transfer_and_fails_with_a_reason() {
    require_anvil!();
    let w = World::on_shared(137).await;
    let Parties {
        alice_p,
        alice,
        bob,
        fees,
        tenant,
    } = Parties::of(&w, "rev", "rev_bob", "rev_tenant").await;
    w.mint(w.usdc, &alice, 50_000_000).await;
    // The token refuses the tenant-fee address: the third call of the batch reverts.
    w.node
        .send(
            Some(w.usdc),
            abi::call(
                "setBlocked(address,bool)",
                &[Abi::address(&tenant.0), Abi::uint(1)],
            ),
            0,
        )
        .await;
    let p = w
        .payment(
            "op_rev",
            &alice_p,
            vec![
                (bob, 9_000_000, LegRole::Recipient),
                (fees, 30_000, LegRole::ServiceFee),
                (tenant, 970_000, LegRole::TenantFee),
            ],
        )
        .await;
    w.rail.submit(&p).await.expect("submit");
    match w.settle(&w.rail, "op_rev").await {
        SubmissionStatus::Failed {
            reason, tx_hash, ..
        } => {
            assert!(reason.contains("call 2 of the batch reverted"), "{reason}");
            assert!(reason.contains("TestToken: blocked"), "{reason}");
            assert!(tx_hash.is_some());
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(w.usdc_of(&alice).await, w.base(50_000_000));
    assert_eq!(w.usdc_of(&bob).await, 0);
    assert_eq!(w.usdc_of(&fees).await, 0);
    assert_eq!(w.node.native_balance(&alice).await, 0);
}

/// Forwards everything, but the answer to `eth_sendRawTransaction` is lost (the node got
/// it) and receipts are never found: only the EntryPoint's log can tell.
struct LossyRpc {
    inner: Arc<HttpJsonRpc>,
    sends: AtomicUsize,
}

impl LossyRpc {
    fn over(w: &World) -> Arc<LossyRpc> {
        Arc::new(LossyRpc {
            inner: w.node.rpc.clone(),
            sends: AtomicUsize::new(0),
        })
    }
}

/// The reported hash is a real transaction, and it succeeded.
async fn assert_bundle_succeeded(w: &World, tx: &str) {
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([tx]))
        .await
        .unwrap();
    assert_eq!(receipt["status"], "0x1");
}

#[async_trait::async_trait]
impl JsonRpc for LossyRpc {
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "eth_sendRawTransaction" => {
                self.sends.fetch_add(1, Ordering::SeqCst);
                self.inner.request(method, params).await?;
                Err(RpcError::Transport(
                    "connection reset after the request was sent".into(),
                ))
            }
            "eth_getTransactionReceipt" => Ok(Value::Null),
            _ => self.inner.request(method, params).await,
        }
    }
}

#[tokio::test]
async fn a_bundle_whose_receipt_is_lost_is_reconciled_to_settled_without_a_second_send() {
    require_anvil!();
    let w = World::on_shared(137).await;
    let lossy = LossyRpc::over(&w);
    let rail = rail_over(&w.config, lossy.clone(), w.signer.clone());
    let alice_p = wallet("lost");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("lost_bob")).await;
    w.mint(w.usdc, &alice, 20_000_000).await;
    let p = w
        .payment(
            "op_lost",
            &alice_p,
            vec![(bob, 5_000_000, LegRole::Recipient)],
        )
        .await;
    match rail.submit(&p).await {
        Err(RailError::Unknown { .. }) => {}
        other => panic!("expected SUBMISSION_UNKNOWN, got {other:?}"),
    }
    // Asking again neither sends again nor forgets.
    assert!(rail.submit(&p).await.is_ok());
    let status = w.settle(&rail, "op_lost").await;
    let tx = confirmed_tx(&status);
    assert_eq!(lossy.sends.load(Ordering::SeqCst), 1, "exactly one send");
    assert_eq!(w.usdc_of(&bob).await, w.base(5_000_000));
    // The reported hash is the real bundle transaction.
    assert_bundle_succeeded(&w, &tx).await;
}

/// A process that sent a bundle and died before learning its outcome: a new rail over
/// the same journal (a `StoreJournal` on one store) reconciles the payment from the
/// EntryPoint's log; neither its `status` nor a repeated `submit` sends anything.
#[tokio::test]
async fn a_restarted_rail_reconciles_an_in_flight_payment_from_the_journal() {
    require_anvil!();
    let w = World::on_shared(137).await;
    let store = Arc::new(MemoryStore::new());
    let journal = || Arc::new(StoreJournal::new(store.clone(), Arc::new(SystemClock)));
    let lossy = LossyRpc::over(&w);
    let first = rail_over(&w.config, lossy.clone(), w.signer.clone()).with_journal(journal());
    let alice_p = wallet("restart");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("restart_bob")).await;
    w.mint(w.usdc, &alice, 9_000_000).await;
    let p = w
        .payment(
            "op_restart",
            &alice_p,
            vec![(bob, 4_000_000, LegRole::Recipient)],
        )
        .await;
    assert!(matches!(
        first.submit(&p).await,
        Err(RailError::Unknown { .. })
    ));
    drop(first);
    // Without the journal a new process would not know the payment at all.
    let amnesiac = rail_over(&w.config, lossy.clone(), w.signer.clone());
    assert_eq!(
        amnesiac.status("op_restart").await.unwrap(),
        SubmissionStatus::NotFound
    );
    let second = rail_over(&w.config, lossy.clone(), w.signer.clone()).with_journal(journal());
    let status = w.settle(&second, "op_restart").await;
    let tx = confirmed_tx(&status);
    assert!(second.submit(&p).await.is_ok());
    assert_eq!(lossy.sends.load(Ordering::SeqCst), 1, "exactly one send");
    assert_eq!(w.usdc_of(&bob).await, w.base(4_000_000));
    assert_eq!(w.usdc_of(&alice).await, w.base(5_000_000));
    assert_bundle_succeeded(&w, &tx).await;
}

#[tokio::test]
async fn three_concurrent_transfers_from_one_account_all_settle() {
    require_anvil!();
    // Its own node with automining off: the three operations are in the mempool at once
    // (the first deploying the account), and are mined together.
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |_| {}).await;
    let alice_p = wallet("conc");
    let alice = w.account(&alice_p).await;
    let bobs = [
        w.account(&wallet("conc_b1")).await,
        w.account(&wallet("conc_b2")).await,
        w.account(&wallet("conc_b3")).await,
    ];
    w.mint(w.usdc, &alice, 30_000_000).await;
    let mut payments = Vec::new();
    for (i, bob) in bobs.iter().enumerate() {
        payments.push(
            w.payment(
                &format!("op_c{i}"),
                &alice_p,
                vec![(*bob, 1_000_000 * (i as u64 + 1), LegRole::Recipient)],
            )
            .await,
        );
    }
    let (a, b, c) = tokio::join!(
        w.rail.submit(&payments[0]),
        w.rail.submit(&payments[1]),
        w.rail.submit(&payments[2])
    );
    let hashes: Vec<String> = [a, b, c]
        .into_iter()
        .map(|r| r.expect("submit").tx_hash.expect("tx hash"))
        .collect();
    // Nothing mined yet: all three are pending together.
    for i in 0..3 {
        assert!(matches!(
            w.rail.status(&format!("op_c{i}")).await.unwrap(),
            SubmissionStatus::Pending { .. }
        ));
    }
    w.node.mine(1).await;
    for (i, h) in hashes.iter().enumerate() {
        let tx = confirmed_tx(&w.settle(&w.rail, &format!("op_c{i}")).await);
        assert_eq!(&tx, h);
    }
    for (i, bob) in bobs.iter().enumerate() {
        assert_eq!(w.usdc_of(bob).await, w.base(1_000_000 * (i as u64 + 1)));
    }
    assert_eq!(w.usdc_of(&alice).await, w.base(24_000_000));
    assert_eq!(w.node.native_balance(&alice).await, 0);
}

#[tokio::test]
async fn an_external_erc20_transfer_into_a_wallet_is_detected_and_confirmed() {
    require_anvil!();
    // Its own node: on the shared one, other tests' blocks would confirm it early.
    let anvil = Anvil::start(137, true);
    let w = World::deploy(&anvil.url, 137, true, |c| c.confirmations = 3).await;
    let start = w.node.eth().block_number().await.unwrap();
    let alice = w.account(&wallet("scan")).await;
    let other = w.account(&wallet("scan_other")).await;
    // An outside holder (the dev account) pays alice with a plain ERC-20 transfer.
    w.mint(w.usdt, &w.node.dev, 9_000_000).await;
    w.node
        .send(
            Some(w.usdt),
            abi::call(
                "transfer(address,uint256)",
                &[Abi::address(&alice.0), Abi::uint(w.base(2_500_000))],
            ),
            0,
        )
        .await;
    w.mint(w.usdt, &other, 1_000_000).await; // not watched
    let watched = [ChainAddress(alice.to_string())];
    let cursor = start.to_string();
    let first = w.rail.scan(&cursor, &watched, 100).await.unwrap();
    assert_eq!(first.inbound.len(), 1, "{first:?}");
    let d = &first.inbound[0];
    assert_eq!((d.token, d.amount), (Token::Usdt, Micros(2_500_000)));
    assert_eq!(d.to.0, alice.to_string());
    assert_eq!(d.from.0, w.node.dev.to_string());
    assert!(!d.confirmed, "one block deep of three");
    assert!(
        first.cursor.parse::<u64>().unwrap() <= d.block,
        "the cursor waits for it"
    );
    w.node.mine(3).await;
    let second = w.rail.scan(&first.cursor, &watched, 100).await.unwrap();
    let d2 = second
        .inbound
        .iter()
        .find(|i| i.tx_hash == d.tx_hash)
        .expect("reported again");
    assert!(d2.confirmed && d2.confirmations >= 3);
    assert!(second.cursor.parse::<u64>().unwrap() > d.block);
    // Later scans from the new cursor do not report it again.
    let third = w.rail.scan(&second.cursor, &watched, 100).await.unwrap();
    assert!(third.inbound.iter().all(|i| i.tx_hash != d.tx_hash));
}

#[tokio::test]
async fn readiness_degrades_before_sponsored_sends_would_fail() {
    require_anvil!();
    let w = World::on_shared(137).await;
    assert_eq!(w.rail.readiness().await.status, ReadinessStatus::Ready);
    // The bundler running dry: sends are no longer offered, reads still are.
    let bundler = owner_of(&*w.signer, &KeyPurpose::Sponsor).await;
    w.node.set_balance(&bundler, 1_000).await;
    let r = w.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::InboundReady, "{r:?}");
    assert!(r.reasons.iter().any(|m| m.contains("bundler")), "{r:?}");
    // A paymaster deposit below the threshold says so too.
    let mut strict = w.config.clone();
    strict.min_paymaster_deposit_wei = 100 * ETH;
    let r = rail_over(&strict, w.node.rpc.clone(), w.signer.clone())
        .readiness()
        .await;
    assert!(
        r.reasons.iter().any(|m| m.contains("paymaster deposit")),
        "{r:?}"
    );
    // A profile pointing at no contract is degraded, with the reason.
    let mut wrong = w.config.clone();
    wrong.paymaster = "0x000000000000000000000000000000000000dead"
        .parse()
        .unwrap();
    let r = rail_over(&wrong, w.node.rpc.clone(), w.signer.clone())
        .readiness()
        .await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(
        r.reasons
            .iter()
            .any(|m| m.contains("no paymaster contract")),
        "{r:?}"
    );
    // A missing field refuses to build the rail at all.
    let mut incomplete = w.config.clone();
    incomplete.usdc = None;
    incomplete.usdt = None;
    assert!(
        EvmRail::new(
            incomplete,
            w.node.rpc.clone(),
            w.signer.clone(),
            Arc::new(SelfBundler::new(
                w.node.rpc.clone(),
                w.signer.clone(),
                KeyPurpose::Sponsor,
                w.config.entry_point,
                137
            )),
        )
        .is_err()
    );
}

#[tokio::test]
async fn two_chains_enabled_at_once_each_move_their_own_tokens() {
    require_anvil!();
    let polygon = World::on_shared(137).await;
    let bsc = World::on_shared(56).await;
    let rails: [&dyn Rail; 2] = [&polygon.rail, &bsc.rail];
    assert_eq!(rails[0].id().name(), "polygon");
    assert_eq!(rails[1].id().name(), "bsc");
    for w in [&polygon, &bsc] {
        assert_eq!(w.rail.readiness().await.status, ReadinessStatus::Ready);
        let from = wallet("two_chains");
        let a = w.account(&from).await;
        let b = w.account(&wallet("two_chains_to")).await;
        w.mint(w.usdc, &a, 5_000_000).await;
        let p = w
            .payment("op_two", &from, vec![(b, 2_000_000, LegRole::Recipient)])
            .await;
        // The same payment id on two chains: two payments, one per rail.
        w.rail.submit(&p).await.expect("submit");
        confirmed_tx(&w.settle(&w.rail, "op_two").await);
        assert_eq!(
            w.rail
                .balance(&ChainAddress(b.to_string()), Token::Usdc)
                .await
                .unwrap(),
            Micros(2_000_000)
        );
        assert_eq!(w.usdc_of(&b).await, w.base(2_000_000));
    }
    // 18 decimals on BNB Smart Chain, 6 on Polygon: the same micro-units, different raw.
    assert_eq!(bsc.base(1), 1_000_000_000_000);
    assert_eq!(polygon.base(1), 1);
}

/// The chain's time now: the head block's timestamp (Unix seconds).
async fn chain_now(w: &World) -> u64 {
    let eth = w.node.eth();
    let head = eth.block_number().await.unwrap();
    eth.block_timestamp(head).await.unwrap()
}

/// The next block is mined `secs` after the current head (Anvil's clock moves on).
async fn next_block_in(w: &World, secs: u64) {
    let at = chain_now(w).await + secs;
    w.node
        .rpc
        .request("evm_setNextBlockTimestamp", json!([at]))
        .await
        .expect("evm_setNextBlockTimestamp");
    w.node.mine(1).await;
}

/// A payment's deadline becomes the operation's `validUntil`, signed into the paymaster
/// data: the real EntryPoint refuses the operation once a block is past it, whether it
/// comes late (refused in simulation, nothing sent) or is sent in time and mined late
/// (the bundle reverts, nothing moves). In time it lands as usual.
#[tokio::test]
async fn a_user_operation_past_its_valid_until_is_refused_by_the_entry_point() {
    require_anvil!();
    // Its own node with automining off: the test moves its clock and mines by hand.
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |_| {}).await;
    let bob = w.account(&wallet("vu_bob")).await;
    let payer = |n: &str| wallet(&format!("vu_{n}"));
    for n in ["expired", "late", "in_time"] {
        let a = w.account(&payer(n)).await;
        w.mint(w.usdc, &a, 10_000_000).await;
    }
    let deadline_in = |secs: i64, now: u64| Some(Timestamp::from_secs(now as i64 + secs));

    // Already past its deadline: the EntryPoint refuses it in simulation (AA32).
    let now = chain_now(&w).await;
    let mut p = w
        .payment(
            "op_expired",
            &payer("expired"),
            vec![(bob, 1_000_000, LegRole::Recipient)],
        )
        .await;
    p.valid_until = deadline_in(-60, now);
    match w.rail.submit(&p).await {
        Err(RailError::Rejected { reason }) => assert!(reason.contains("AA32"), "{reason}"),
        other => panic!("expected the EntryPoint's AA32 refusal, got {other:?}"),
    }
    assert_eq!(
        w.rail.status("op_expired").await.unwrap(),
        SubmissionStatus::NotFound
    );

    // Valid when sent, mined after its deadline: the bundle reverts, nothing moves.
    let now = chain_now(&w).await;
    let mut p = w
        .payment(
            "op_late",
            &payer("late"),
            vec![(bob, 2_000_000, LegRole::Recipient)],
        )
        .await;
    p.valid_until = deadline_in(30, now);
    w.rail.submit(&p).await.expect("valid when sent");
    next_block_in(&w, 120).await;
    match w.settle(&w.rail, "op_late").await {
        SubmissionStatus::Failed { .. } => {}
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(w.usdc_of(&bob).await, 0);
    let late = w.account(&payer("late")).await;
    assert_eq!(w.usdc_of(&late).await, w.base(10_000_000));

    // In time: it lands.
    let now = chain_now(&w).await;
    let mut p = w
        .payment(
            "op_in_time",
            &payer("in_time"),
            vec![(bob, 3_000_000, LegRole::Recipient)],
        )
        .await;
    p.valid_until = deadline_in(600, now);
    w.rail.submit(&p).await.expect("submit");
    w.node.mine(1).await;
    confirmed_tx(&w.settle(&w.rail, "op_in_time").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(3_000_000));
}

/// A bundle that never made it into a block (dropped from the mempool, its answer lost)
/// stays `Pending` while its operation could still be mined, and is `NotFound` once the
/// chain is past its `validUntil`: from then on no block can include it.
#[tokio::test]
async fn a_dropped_bundle_is_not_found_once_the_chain_is_past_its_valid_until() {
    require_anvil!();
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |_| {}).await;
    let lossy = LossyRpc::over(&w);
    let rail = rail_over(&w.config, lossy.clone(), w.signer.clone());
    let alice_p = wallet("drop");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("drop_bob")).await;
    w.mint(w.usdc, &alice, 5_000_000).await;
    let now = chain_now(&w).await;
    let mut p = w
        .payment(
            "op_dropped",
            &alice_p,
            vec![(bob, 1_000_000, LegRole::Recipient)],
        )
        .await;
    p.valid_until = Some(Timestamp::from_secs(now as i64 + 30));
    assert!(matches!(
        rail.submit(&p).await,
        Err(RailError::Unknown { .. })
    ));
    let tx = rail.submitted("op_dropped").unwrap().tx_hash.expect("sent");
    w.node
        .rpc
        .request("anvil_dropTransaction", json!([hex0x(&tx)]))
        .await
        .expect("anvil_dropTransaction");
    assert!(matches!(
        rail.status("op_dropped").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    next_block_in(&w, 120).await;
    assert_eq!(
        rail.status("op_dropped").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert_eq!(w.usdc_of(&bob).await, 0);
    assert_eq!(lossy.sends.load(Ordering::SeqCst), 1);
}
