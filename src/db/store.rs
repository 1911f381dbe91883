//! Writing database files safely: an exclusive lock around every read-modify-write so two tuners
//! on one host lose none of each other's entries, and atomic replacement (temporary file in the
//! same directory, then rename) so a crash never leaves half a file.
//!
//! A path that is a symbolic link is written through: the link's final target is locked and
//! replaced, the link stays. Temporary files are named after the database
//! (`.<name>.convtune-tmp-XXXXXX`), so a writer that holds the lock removes the ones a killed
//! writer left behind. The lock file records its holder's process id, so a writer that has to
//! wait can say for whom.

use super::error::DbError;
use super::file::TunedDb;
use fs2::FileExt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a writer waits for a busy lock before it reports who holds it.
const QUIET_WAIT: Duration = Duration::from_millis(500);

/// Called once when a writer has waited [`QUIET_WAIT`] for a lock: the lock file and the pid
/// recorded in it (if any). The CLI prints it; a library caller may log it or leave it unset.
pub type LockWaitHook = fn(&Path, Option<u32>);

static LOCK_WAIT_HOOK: OnceLock<LockWaitHook> = OnceLock::new();

/// Sets what a writer does when it has to wait for another's lock (once per process; later calls
/// are ignored).
pub fn on_lock_wait(hook: LockWaitHook) {
    let _ = LOCK_WAIT_HOOK.set(hook);
}

/// The file a write to `path` really replaces: `path`, or the final target of the symbolic
/// link(s) it names (a dangling link's target is where the file will be created). Relative
/// link targets are resolved against the link's directory.
pub fn write_target(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    // The kernel gives up after 40 links; so does this.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&p) {
                Ok(t) if t.is_absolute() => p = t,
                Ok(t) => {
                    p = p.parent().map_or_else(|| t.clone(), |d| d.join(&t));
                }
                Err(_) => break,
            },
            _ => break,
        }
    }
    p
}

/// Holds `<file>.lock` exclusively until dropped.
///
/// The lock is on a separate file because the database file itself is replaced by rename: a
/// lock on the old inode would not stop a second writer that opens the new one. The lock file is
/// never deleted (deleting it would let two processes lock two different inodes).
#[derive(Debug)]
pub struct DbLock {
    file: File,
    path: PathBuf,
}

impl DbLock {
    /// Blocks until this process holds the lock for database file `path` (through symbolic
    /// links: see [`write_target`]), creating the parent directory and the lock file when
    /// needed. After a short wait the [`on_lock_wait`] hook hears who holds it.
    pub fn acquire(path: &Path) -> Result<DbLock, DbError> {
        let lock_path = lock_path(&write_target(path));
        if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| DbError::io("creating directory", dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| DbError::io("opening lock file", &lock_path, e))?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match FileExt::try_lock_exclusive(&file) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => {
                    if !told && start.elapsed() >= QUIET_WAIT {
                        told = true;
                        if let Some(hook) = LOCK_WAIT_HOOK.get() {
                            hook(&lock_path, holder(&lock_path));
                        }
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(DbError::io("locking", &lock_path, e)),
            }
        }
        let mut lock = DbLock {
            file,
            path: lock_path,
        };
        // Best effort: the pid only serves the message above.
        let _ = lock.record_pid();
        Ok(lock)
    }

    fn record_pid(&mut self) -> std::io::Result<()> {
        self.file.set_len(0)?;
        self.file.rewind()?;
        writeln!(self.file, "{}", std::process::id())?;
        self.file.flush()
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DbLock {
    fn drop(&mut self) {
        // Closing the descriptor releases the lock too; unlocking first makes it immediate.
        let _ = FileExt::unlock(&self.file);
    }
}

/// The pid recorded in a lock file, if it reads as one.
fn holder(lock_path: &Path) -> Option<u32> {
    let mut text = String::new();
    File::open(lock_path)
        .ok()?
        .take(32)
        .read_to_string(&mut text)
        .ok()?;
    text.trim().parse().ok()
}

/// `<file>.lock`, next to the database file.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Prefix of the temporary files of writes to `path` (a file name in its directory).
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.convtune-tmp-")
}

/// Removes the temporary files that killed writers of `path` left in `dir`. Only called under
/// the lock of `path`: every writer of `path` holds it from before it creates its temporary
/// file until after it renames it, so any such file found now belongs to a dead writer.
fn remove_stale_temps(dir: &Path, path: &Path) {
    let prefix = temp_prefix(path);
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for f in list.flatten() {
        if f.file_name().to_string_lossy().starts_with(&prefix)
            && f.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(f.path());
        }
    }
}

/// Replaces `path` (through symbolic links) with `text` atomically: readers see the old file or
/// the new one, never a mix. Keeps the permissions of the file it replaces. Callers hold the
/// lock of `path`.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), DbError> {
    let path = &write_target(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| DbError::io("creating directory", &dir, e))?;
    remove_stale_temps(&dir, path);
    let mut tmp = tempfile::Builder::new()
        .prefix(&temp_prefix(path))
        .rand_bytes(8)
        .tempfile_in(&dir)
        .map_err(|e| DbError::io("creating a temporary file in", &dir, e))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| DbError::io("writing", tmp.path().to_path_buf(), e))?;
    let perms = match std::fs::metadata(path) {
        Ok(m) => Some(m.permissions()),
        Err(_) => default_permissions(),
    };
    if let Some(p) = perms {
        std::fs::set_permissions(tmp.path(), p)
            .map_err(|e| DbError::io("setting permissions of", tmp.path().to_path_buf(), e))?;
    }
    tmp.persist(path)
        .map_err(|e| DbError::io("renaming into", path, e.error))?;
    // Make the rename itself durable; some platforms cannot open a directory, which only costs
    // durability on power loss, not correctness.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // tempfile creates 0600; a database is meant to be shared like any other data file.
    Some(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

/// Fails unless `path` is absent or holds a database for `arch`; under the lock, this is what
/// keeps a write from destroying a file that a person broke by hand.
fn check_replaceable(path: &Path, arch: &str) -> Result<(), DbError> {
    match TunedDb::load_or_new(path, arch) {
        Ok(_) => Ok(()),
        Err(e @ (DbError::Io { .. } | DbError::Read(_))) => Err(e),
        Err(e @ DbError::ArchMismatch { .. }) => Err(e),
        Err(cause) => Err(DbError::RefuseOverwrite {
            path: path.to_path_buf(),
            cause: Box::new(cause),
        }),
    }
}

impl TunedDb {
    /// Writes the database to `path`, replacing what is there, under the file's lock. Refuses
    /// to replace a file that does not parse or belongs to another arch. To add entries to a
    /// file that others may be writing too, use [`TunedDb::update_file`] instead.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let lock = DbLock::acquire(path)?;
        self.save_locked(path, &lock)
    }

    /// [`Self::save`] for a caller that already holds `path`'s lock, because it read what it
    /// writes under that lock (`db merge A B -o A` reads `A` after locking it, so a concurrent
    /// writer's entries are not lost).
    pub fn save_locked(&self, path: &Path, lock: &DbLock) -> Result<(), DbError> {
        if lock.path != lock_path(&write_target(path)) {
            return Err(DbError::io(
                "writing without its lock",
                path,
                std::io::Error::other(format!("the lock held is {}", lock.path.display())),
            ));
        }
        check_replaceable(path, self.arch())?;
        write_atomic(path, &self.to_toml_string())
    }

    /// Read-modify-write under the lock: re-reads `path` (an absent file is an empty database
    /// for `arch`), lets `f` change it, and writes it back atomically, so concurrent updaters
    /// on one host each see the others' entries. A file that does not parse is left untouched
    /// and reported as [`DbError::RefuseOverwrite`]; nothing is written when `f` changes
    /// nothing.
    pub fn update_file<R>(
        path: &Path,
        arch: &str,
        f: impl FnOnce(&mut TunedDb) -> R,
    ) -> Result<R, DbError> {
        let _lock = DbLock::acquire(path)?;
        let mut db = match TunedDb::load_or_new(path, arch) {
            Ok(db) => db,
            Err(e @ (DbError::Io { .. } | DbError::Read(_) | DbError::ArchMismatch { .. })) => {
                return Err(e)
            }
            Err(cause) => {
                return Err(DbError::RefuseOverwrite {
                    path: path.to_path_buf(),
                    cause: Box::new(cause),
                })
            }
        };
        let before = db.revision();
        let r = f(&mut db);
        if db.revision() != before {
            write_atomic(path, &db.to_toml_string())?;
        }
        Ok(r)
    }
}
