//! A spending policy set in the tenant dashboard in headless Chromium (issue #51): a
//! refused form shown in words, then a per-transaction cap created in the page, which
//! the API then applies: a withdrawal over the cap refused (POLICY_DENIED naming the
//! page's policy, nothing held), one at the cap accepted; the policy edited and deleted
//! in the page. Screenshots under target/screenshots/policies_browser/.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::json;
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::RailId;

const A: &str = "+2250700000401";

async fn text(b: &mut Browser) -> String {
    b.eval("document.body.innerText")
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn withdraw(s: &Server, key: &str, amount: &str) -> Resp {
    let body = json!({"phone_number": A, "token": "USDC", "amount": amount,
        "payout_currency": "XOF"});
    s.post(key, "/v1/users/withdraw", &body.to_string()).await
}

async fn available(s: &Server, wallet: &WalletId) -> String {
    let e = s.app.engine();
    let acct = e.wallet_account(wallet, RailId::Evm(137), Token::Usdc);
    let b = e.ports().ledger.balance(&acct.id).await.unwrap();
    Micros(u64::try_from(b.available()).unwrap()).to_decimal_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_set_in_the_dashboard_refuses_a_withdrawal_over_it_over_the_api() {
    let Some(mut b) = Browser::launch("policies_browser").await else {
        return;
    };
    let s = start().await;
    let base = s.base.clone();
    let t = s.tenant("Capped Fintech", "1000").await;
    let w = s.provision(&t.live, A).await;
    let wallet = WalletId(w["wallet_id"].as_str().unwrap().into());
    s.fund_settled(&t.live, A, "100").await;

    b.navigate(&format!("{base}/dashboard/login")).await;
    b.fill("#api_key", &t.live).await;
    b.click_and_load("form button[type=submit]").await;
    b.navigate(&format!("{base}/dashboard/policies")).await;
    assert!(text(&mut b).await.contains("Create a policy"));
    b.shot("empty").await;

    // A refused form: the code and the words, what was typed kept.
    b.fill("#max_per_transaction", "ten").await;
    b.click_and_load("#policy-form button[type=submit]").await;
    let t1 = text(&mut b).await;
    assert!(t1.contains("INVALID_AMOUNT"), "{t1}");
    assert_eq!(
        b.eval("document.getElementById('max_per_transaction').value")
            .await,
        json!("ten")
    );
    b.shot("refused").await;

    b.fill("#max_per_transaction", "10").await;
    b.fill("#token", "USDC").await;
    b.fill("#window_24h_count", "5").await;
    b.click_and_load("#policy-form button[type=submit]").await;
    let id = b
        .eval("document.getElementById('created-policy').textContent")
        .await
        .as_str()
        .expect("the created policy's id")
        .to_string();
    assert!(id.starts_with("pol_"), "{id}");
    let listed = text(&mut b).await;
    assert!(
        listed.contains("at most 10.000000 per transaction")
            && listed.contains("5 operations per 24h"),
        "{listed}"
    );
    b.shot("created").await;

    // The API applies it: over the cap refused naming this policy, nothing held.
    let r = withdraw(&s, &t.live, "15").await;
    r.expect_err(403, "POLICY_DENIED");
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:max_per_transaction")
    );
    assert_eq!(available(&s, &wallet).await, "100.000000", "nothing held");
    withdraw(&s, &t.live, "10").await.expect(202);
    assert_eq!(available(&s, &wallet).await, "90.000000");

    // Edited in the page: the next request follows the new cap.
    b.click_and_load(&format!("a[href='/dashboard/policies/{id}']"))
        .await;
    assert_eq!(
        b.eval("document.getElementById('max_per_transaction').value")
            .await,
        json!("10.000000")
    );
    b.shot("edit").await;
    b.fill("#max_per_transaction", "20").await;
    b.click_and_load("#policy-form button[type=submit]").await;
    assert!(text(&mut b).await.contains("saved"));
    b.shot("saved").await;
    withdraw(&s, &t.live, "15").await.expect(202);

    // Deleted in the page: it governs nothing.
    b.navigate(&format!("{base}/dashboard/policies")).await;
    b.click_and_load(&format!(
        "form[action='/dashboard/policies/{id}/delete'] button"
    ))
    .await;
    assert!(text(&mut b).await.contains("deleted"));
    b.shot("deleted").await;
    withdraw(&s, &t.live, "30").await.expect(202);
}
