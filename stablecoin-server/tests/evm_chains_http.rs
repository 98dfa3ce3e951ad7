//! Two EVM chains at once over HTTP (simulated Polygon 137, primary, and BNB Smart Chain
//! 56): the `network` selector on fund, send, withdraw, swap and the balance read, each
//! chain's balance its own, and `network=all` summing them.

use crate::common::*;
use serde_json::{Value, json};

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

async fn two_chains() -> Server {
    let mut c = test_config();
    c.rails.evm_chains = vec![137, 56];
    start_with(c).await
}

async fn balance(s: &Server, key: &str, phone: &str, network: &str) -> Value {
    let q = format!(
        "/v1/users/balance?phone_number=%2B{}{}",
        &phone[1..],
        if network.is_empty() {
            String::new()
        } else {
            format!("&network={network}")
        }
    );
    let r = s.get(key, &q).await;
    r.expect(200);
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_value_operation_takes_the_chain_it_runs_on() {
    let s = two_chains().await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;

    let r = s
        .post(
            &acme.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "50", "network": "bsc"})
                .to_string(),
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["rail"], "bsc");
    s.settle().await;
    let on_bsc = balance(&s, &acme.live, A, "bsc").await;
    assert_eq!(
        (on_bsc["rail"].as_str(), on_bsc["balance_usdc"].as_str()),
        (Some("bsc"), Some("50.000000"))
    );
    let primary = balance(&s, &acme.live, A, "").await;
    assert_eq!(
        (primary["rail"].as_str(), primary["balance_usdc"].as_str()),
        (Some("polygon"), Some("0.000000"))
    );
    assert_eq!(
        balance(&s, &acme.live, A, "56").await["balance_usdc"],
        "50.000000"
    );

    // Sent on BSC; the primary chain has nothing to send.
    let send = |network: Option<&str>| {
        let mut b = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
            "quote_id": "DIRECT_CRYPTO:USDC:10"});
        if let Some(n) = network {
            b["network"] = json!(n);
        }
        b.to_string()
    };
    s.post(&acme.live, "/v1/transfers/send", &send(None))
        .await
        .expect_err(422, "INSUFFICIENT_FUNDS");
    let t = s
        .post(&acme.live, "/v1/transfers/send", &send(Some("bsc")))
        .await;
    t.expect(202);
    let tr = t.json()["id"].as_str().unwrap().to_string();
    // Swapped on BSC (the treasury venue runs on every chain).
    let sw = s
        .post(
            &acme.live,
            "/v1/swaps",
            &json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
                "amount_in": "5", "network": "bsc"})
            .to_string(),
        )
        .await;
    sw.expect(202);
    // Withdrawn on BSC.
    let wd = s
        .post(
            &acme.live,
            "/v1/users/withdraw",
            &json!({"phone_number": A, "token": "USDC", "amount": "20",
                "payout_currency": "XOF", "network": "bsc"})
            .to_string(),
        )
        .await;
    wd.expect(202);
    for _ in 0..5 {
        s.settle().await;
    }
    let tr = s
        .get(&acme.live, &format!("/v1/transfers/{tr}"))
        .await
        .json();
    assert_eq!(
        (tr["status"].as_str(), tr["rail"].as_str()),
        (Some("SETTLED"), Some("bsc")),
        "{tr}"
    );
    let sw = s
        .get(
            &acme.live,
            &format!("/v1/swaps/{}", sw.json()["id"].as_str().unwrap()),
        )
        .await
        .json();
    assert_eq!(
        (sw["status"].as_str(), sw["rail"].as_str()),
        (Some("SETTLED"), Some("bsc")),
        "{sw}"
    );
    let wd = s
        .get(
            &acme.live,
            &format!("/v1/withdrawals/{}", wd.json()["id"].as_str().unwrap()),
        )
        .await
        .json();
    assert_eq!(wd["rail"], "bsc", "{wd}");
    assert!(
        ["COMPLETED", "CRYPTO_RECEIVED", "PAYOUT_SUBMITTING"]
            .contains(&wd["status"].as_str().unwrap()),
        "{wd}"
    );

    // 50 - 10 sent - 5 swapped - 20 withdrawn on BSC; USDT from the swap; nothing on Polygon.
    let a_bsc = balance(&s, &acme.live, A, "bsc").await;
    assert_eq!(a_bsc["balance_usdc"], "15.000000", "{a_bsc}");
    assert_eq!(a_bsc["balance_usdt"], sw["amount_out"], "{a_bsc}");
    let all = balance(&s, &acme.live, A, "all").await;
    assert_eq!(all["rail"], "all");
    assert_eq!(all["balance_usdc"], "15.000000", "{all}");
    let chains = all["chains"].as_array().unwrap();
    let names: Vec<&str> = chains.iter().map(|c| c["rail"].as_str().unwrap()).collect();
    assert_eq!(names, ["polygon", "bsc"]);
    assert_eq!(all["address"], chains[0]["address"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_that_is_not_an_enabled_evm_chain_is_refused() {
    let s = two_chains().await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    for (network, code) in [
        ("base", "INVALID_PARAMETER"),
        ("tron", "INVALID_PARAMETER"),
        ("0", "INVALID_PARAMETER"),
        ("0056", "INVALID_PARAMETER"),
        ("evm-", "INVALID_PARAMETER"),
        ("56 ", "INVALID_PARAMETER"),
    ] {
        let before = s.commits();
        let r = s
            .post(
                &acme.live,
                "/v1/users/fund",
                &json!({"phone_number": A, "token": "USDC", "amount": "1", "network": network})
                    .to_string(),
            )
            .await;
        r.expect_err(400, code);
        assert_eq!(r.param().as_deref(), Some("network"), "{}", r.text());
        assert_eq!(s.commits(), before, "nothing written");
    }
    s.get(
        &acme.live,
        &format!("/v1/users/balance?phone_number=%2B{}&network=base", &A[1..]),
    )
    .await
    .expect_err(400, "INVALID_PARAMETER");
}
