//! The `stablecoin-signer` binary refuses unsafe set-ups before it listens.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn write(dir: &std::path::Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

fn serve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stablecoin-signer"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_readable_seed_file_or_a_public_address_is_refused() {
    let dir = std::env::temp_dir().join(format!("scsignercli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let token = write(&dir, "token", &"t".repeat(40), 0o600);
    let open_seed = write(&dir, "seed-open", &"11".repeat(32), 0o644);
    let seed = write(&dir, "seed", &"11".repeat(32), 0o600);
    let (t, s, o) = (
        token.to_str().unwrap(),
        seed.to_str().unwrap(),
        open_seed.to_str().unwrap(),
    );

    let (ok, err) = serve(&[
        "--listen",
        "127.0.0.1:0",
        "--seed-file",
        o,
        "--token-file",
        t,
    ]);
    assert!(!ok);
    assert!(err.contains("chmod 600"), "{err}");

    let (ok, err) = serve(&["--listen", "0.0.0.0:0", "--seed-file", s, "--token-file", t]);
    assert!(!ok);
    assert!(err.contains("not a loopback or private address"), "{err}");

    let short = write(&dir, "short-token", "short", 0o600);
    let (ok, err) = serve(&[
        "--listen",
        "127.0.0.1:0",
        "--seed-file",
        s,
        "--token-file",
        short.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(err.contains("at least 32"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
