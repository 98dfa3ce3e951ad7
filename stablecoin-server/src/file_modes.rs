//! Who may read the server's files: the data directory is the owner's alone (0700), the
//! database files are 0600, and a master seed file others can read is refused.
//!
//! The database holds hashed API keys, sealed webhook secrets and every customer's
//! phone number; the seed file derives every key of the service. A default umask (022)
//! would leave both readable by every user of the machine. SQLite creates its `-wal` and
//! `-shm` files with the mode of the database file, so creating that file 0600 before
//! SQLite opens it covers all three.
//!
//! On non-Unix systems these are no-ops: the platform's ACLs apply.

use std::io;
use std::path::Path;

/// Mode bits that give group or others any access.
#[cfg(unix)]
const GROUP_OR_OTHER: u32 = 0o077;

/// Creates `dir` (and its parents) if missing; a directory created here is 0700. An
/// existing directory that group or others may enter is left as it is, with a warning
/// (it may be shared on purpose, e.g. a mount point).
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    if dir.exists() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir)?.permissions().mode();
            if mode & GROUP_OR_OTHER != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{:o}", mode & 0o777),
                    "the data directory is open to other users; chmod 700 it"
                );
            }
        }
        return Ok(());
    }
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Makes `db` (created empty if missing) and its `-wal` / `-shm` companions 0600.
pub fn private_database_file(db: &Path) -> io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    drop(opts.open(db)?);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            let p = std::path::PathBuf::from(p);
            if p.exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?;
            }
        }
    }
    Ok(())
}

/// Refuses a secret file that group or others may read (shared with the signing
/// service, which refuses its seed and token files the same way).
pub use stablecoin_signer::files::require_private_file;

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_data_dir_and_database_are_private() {
        let root = std::env::temp_dir().join(format!("scmodes-{}-{}", std::process::id(), line!()));
        let dir = root.join("a/b");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let db = dir.join("x.db");
        std::fs::write(dir.join("x.db-wal"), b"").unwrap();
        std::fs::set_permissions(dir.join("x.db-wal"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        private_database_file(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&dir.join("x.db-wal")), 0o600);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_seed_file_others_can_read_is_refused() {
        let p = std::env::temp_dir().join(format!("scseedmode-{}", std::process::id()));
        std::fs::write(&p, b"00").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = require_private_file(&p).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(require_private_file(&p).is_ok());
        let _ = std::fs::remove_file(&p);
    }
}
