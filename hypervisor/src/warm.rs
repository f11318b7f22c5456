//! `astraea run --warm -- java … -cp CP Main ARGS`: start a JVM from a
//! snapshot of one that has already started.
//!
//! The project's launcher (`hypervisor/java/astraea/Warm.java`, compiled
//! once with the JDK's `javac`) stands between the JVM and `Main`. The
//! first run of a command records the classes its JVM loads; the second
//! has the launcher load them (without initialising any) and the partition
//! snapshotted before `Main` runs, and goes on. Later runs of the same
//! command — the same JDK, JVM options, class path, partition options,
//! working directory and environment, whatever `Main` and `ARGS` — start
//! from that snapshot: the launcher finds the new command's `Main` and
//! arguments and runs them. The snapshot is keyed by all of that (and
//! by this `astraea` and its kernel), so a change to any of it makes a new
//! one; the environment and working directory are part of the key because
//! a started JVM has read them already.

use std::path::{Path, PathBuf};

/// The launcher's source, compiled on first use.
const LAUNCHER: &str = include_str!("../java/astraea/Warm.java");
/// The launcher's class.
pub const LAUNCHER_CLASS: &str = "astraea.Warm";

/// Why `--warm` cannot be used for a command.
#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    /// The command is not `java … -cp CP Main …`.
    #[error(
        "--warm runs `java [options] -cp CLASSPATH MainClass [args]` (or -classpath / --class-path); {0}"
    )]
    NotJava(String),
    /// The launcher could not be compiled.
    #[error("cannot compile the --warm launcher with {javac}: {why}")]
    Launcher {
        /// The `javac` used.
        javac: PathBuf,
        /// Why.
        why: String,
    },
    /// The cache directory cannot be made.
    #[error("cannot use the --warm cache directory {0}: {1}")]
    Cache(PathBuf, std::io::Error),
}

/// A `java` command split where the launcher goes in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaCommand {
    /// `java` and the options before the class path.
    pub head: Vec<String>,
    /// The class path.
    pub class_path: String,
    /// Options between the class path and the main class.
    pub middle: Vec<String>,
    /// The main class and its arguments.
    pub main_and_args: Vec<String>,
}

impl JavaCommand {
    /// Splits `args` (`java … -cp CP … Main ARGS`).
    pub fn parse(args: &[String]) -> Result<JavaCommand, WarmError> {
        let Some((java, rest)) = args.split_first() else {
            return Err(WarmError::NotJava("no program was given".into()));
        };
        if !crate::jvm_opts::is_java(java) {
            return Err(WarmError::NotJava(format!("{java} is not java")));
        }
        let mut head = vec![java.clone()];
        let mut class_path = None;
        let mut middle = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let a = &rest[i];
            match a.as_str() {
                "-cp" | "-classpath" | "--class-path" => {
                    let Some(cp) = rest.get(i + 1) else {
                        return Err(WarmError::NotJava(format!("{a} has no value")));
                    };
                    class_path = Some(cp.clone());
                    i += 2;
                    continue;
                }
                "-jar" | "-m" | "--module" => {
                    return Err(WarmError::NotJava(format!("{a} is not supported")));
                }
                _ if a.starts_with("--class-path=") => {
                    class_path = Some(a["--class-path=".len()..].to_string());
                }
                _ if !a.starts_with('-') => {
                    let Some(cp) = class_path else {
                        return Err(WarmError::NotJava("no class path was given".into()));
                    };
                    return Ok(JavaCommand {
                        head,
                        class_path: cp,
                        middle,
                        main_and_args: rest[i..].to_vec(),
                    });
                }
                // Options that take a separate value.
                "--add-opens"
                | "--add-exports"
                | "--add-reads"
                | "--add-modules"
                | "--module-path"
                | "-p"
                | "--limit-modules"
                | "--enable-native-access" => {
                    let into = if class_path.is_some() {
                        &mut middle
                    } else {
                        &mut head
                    };
                    into.push(a.clone());
                    if let Some(v) = rest.get(i + 1) {
                        into.push(v.clone());
                    }
                    i += 2;
                    continue;
                }
                _ if class_path.is_some() => middle.push(a.clone()),
                _ => head.push(a.clone()),
            }
            i += 1;
        }
        Err(WarmError::NotJava("no main class was given".into()))
    }

    /// The command with the launcher in front of the main class, its
    /// directory `launcher` on the class path, and `jvm` (options for this
    /// run only) after the command's own JVM options.
    pub fn with_launcher(&self, launcher: &Path, jvm: &[String]) -> Vec<String> {
        let mut v = self.head.clone();
        v.extend(jvm.iter().cloned());
        v.push("-cp".into());
        v.push(format!("{}:{}", self.class_path, launcher.display()));
        v.extend(self.middle.iter().cloned());
        v.push(LAUNCHER_CLASS.into());
        v.extend(self.main_and_args.iter().cloned());
        v
    }

    /// What the snapshot depends on: everything but the main class and
    /// its arguments.
    pub fn key_words(&self) -> Vec<String> {
        let mut v = self.head.clone();
        v.push(self.class_path.clone());
        v.extend(self.middle.iter().cloned());
        v
    }
}

/// The directory of `--warm`'s snapshots and launcher:
/// `$XDG_CACHE_HOME/astraea/warm`, else `$HOME/.cache/astraea/warm`, else
/// `/tmp/astraea-warm-UID`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("astraea/warm");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".cache/astraea/warm");
    }
    // SAFETY: getuid has no preconditions.
    PathBuf::from(format!("/tmp/astraea-warm-{}", unsafe { libc::getuid() }))
}

/// FNV-1a, 64 bits: a key that stays the same across builds of `astraea`.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // A separator, so that ["ab", "c"] and ["a", "bc"] differ.
    *h ^= 0xff;
    *h = h.wrapping_mul(0x0000_0100_0000_01b3);
}

/// A file's identity for the key: path, size and modification time.
fn file_id(p: &Path) -> String {
    match std::fs::metadata(p) {
        Ok(m) => {
            use std::os::unix::fs::MetadataExt;
            format!(
                "{}:{}:{}.{}",
                p.display(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            )
        }
        Err(_) => p.display().to_string(),
    }
}

/// The snapshot file for `words` (the command without its main class and
/// arguments, and the partition's options), in this directory, with this
/// environment, on this `astraea` and `kernel`.
pub fn snapshot_path(words: &[String], kernel: &Path) -> PathBuf {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let me = std::env::current_exe().unwrap_or_default();
    for w in [file_id(&me), file_id(kernel)] {
        fnv(&mut h, w.as_bytes());
    }
    for w in words {
        fnv(&mut h, w.as_bytes());
    }
    if let Some(java) = words.first() {
        fnv(&mut h, file_id(Path::new(java)).as_bytes());
    }
    fnv(
        &mut h,
        std::env::current_dir()
            .unwrap_or_default()
            .as_os_str()
            .as_encoded_bytes(),
    );
    // Not the shell's `_` (the path it ran: `strace`, `time` and scripts
    // change it) nor the VMM's own sampler switch: neither reaches a JVM's
    // behaviour, and keyed they would make every run a first run.
    let mut env: Vec<_> = std::env::vars_os()
        .filter(|(k, _)| k != "_" && k != crate::sampler::SAMPLE_ENV)
        .collect();
    env.sort();
    for (k, v) in env {
        fnv(&mut h, k.as_encoded_bytes());
        fnv(&mut h, v.as_encoded_bytes());
    }
    cache_dir().join(format!("{h:016x}.snap"))
}

/// The phase of a command's `--warm` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The first run: the JVM records the classes it loads in this file
    /// (`-XX:DumpLoadedClassList`).
    Record(PathBuf),
    /// The second: the launcher loads (without initialising) the classes
    /// the first run recorded, then has the partition snapshotted to this
    /// file, so that the snapshot holds the application's classes too.
    Snapshot {
        /// The classes.
        classes: PathBuf,
        /// The snapshot.
        snapshot: PathBuf,
    },
    /// Later runs: from this snapshot.
    Restore(PathBuf),
}

/// Where the first run of `snapshot`'s command records its classes: the
/// host's `/tmp` (which partitions see read-write at the same path; the
/// cache directory is read-only to them).
pub fn classes_path(snapshot: &Path) -> PathBuf {
    let stem = snapshot
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir()
        .join(format!("astraea-warm-{uid}"))
        .join(format!("{}.classes", stem.unwrap_or_default()))
}

/// Where `snapshot`'s command stands.
pub fn phase(snapshot: &Path) -> Phase {
    let classes = classes_path(snapshot);
    if snapshot.exists() {
        // The snapshot holds the classes now.
        let _ = std::fs::remove_file(&classes);
        return Phase::Restore(snapshot.to_path_buf());
    }
    let recorded = std::fs::metadata(&classes).is_ok_and(|m| m.len() > 0);
    if recorded {
        Phase::Snapshot {
            classes,
            snapshot: snapshot.to_path_buf(),
        }
    } else {
        Phase::Record(classes)
    }
}

/// How many `--warm` snapshots the cache keeps (each is tens of MB on disk;
/// a command run with another environment makes another).
pub const KEEP: usize = 8;

/// Marks `snap` as just used (its modification time: the cache keeps the
/// most recently used).
pub fn touch(snap: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(snap) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Removes the least recently used snapshots so that `room` more fit under
/// [`KEEP`].
pub fn prune(room: usize) {
    prune_in(&cache_dir(), room);
}

fn prune_in(dir: &Path, room: usize) {
    let Ok(dir) = std::fs::read_dir(dir) else {
        return;
    };
    let mut snaps: Vec<(std::time::SystemTime, PathBuf)> = dir
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "snap"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    snaps.sort();
    let excess = (snaps.len() + room).saturating_sub(KEEP);
    for (_, p) in snaps.into_iter().take(excess) {
        tracing::info!(snapshot = %p.display(), "--warm: removing the least recently used snapshot");
        let _ = std::fs::remove_file(crate::working_set::path(&p));
        let _ = std::fs::remove_file(p);
    }
}

/// The launcher's class directory, compiled with `javac` (next to `java`)
/// the first time.
pub fn launcher(java: &Path) -> Result<PathBuf, WarmError> {
    let dir = cache_dir();
    let src_dir = dir.join("launcher-src");
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    fnv(&mut h, LAUNCHER.as_bytes());
    let out = dir.join(format!("launcher-{h:016x}"));
    if out.join("astraea/Warm.class").is_file() {
        return Ok(out);
    }
    std::fs::create_dir_all(&src_dir).map_err(|e| WarmError::Cache(src_dir.clone(), e))?;
    let src = src_dir.join("Warm.java");
    std::fs::write(&src, LAUNCHER).map_err(|e| WarmError::Cache(src.clone(), e))?;
    let javac = java.with_file_name("javac");
    let tmp = dir.join(format!("launcher-{h:016x}.{}", std::process::id()));
    let o = std::process::Command::new(&javac)
        .args(["--release", "11", "-d"])
        .arg(&tmp)
        .arg(&src)
        .output()
        .map_err(|e| WarmError::Launcher {
            javac: javac.clone(),
            why: format!("{e} (a JDK with javac is needed for the first --warm run)"),
        })?;
    if !o.status.success() {
        return Err(WarmError::Launcher {
            javac,
            why: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    // Another run may have made it meanwhile: either copy will do.
    if std::fs::rename(&tmp, &out).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn splits_java_commands_where_the_launcher_goes() {
        let c = JavaCommand::parse(&words("/jdk/bin/java -Xmx64m -cp a:b -ea Main x y")).unwrap();
        assert_eq!(c.head, words("/jdk/bin/java -Xmx64m"));
        assert_eq!(c.class_path, "a:b");
        assert_eq!(c.middle, words("-ea"));
        assert_eq!(c.main_and_args, words("Main x y"));
        assert_eq!(
            c.with_launcher(Path::new("/l"), &words("-Dp=1")),
            words("/jdk/bin/java -Xmx64m -Dp=1 -cp a:b:/l -ea astraea.Warm Main x y")
        );
        assert_eq!(c.key_words(), words("/jdk/bin/java -Xmx64m a:b -ea"));
        let c = JavaCommand::parse(&words("java --add-opens java.base/x=ALL -cp . M")).unwrap();
        assert_eq!(c.head, words("java --add-opens java.base/x=ALL"));
        assert!(JavaCommand::parse(&words("java -jar app.jar")).is_err());
        assert!(JavaCommand::parse(&words("java Main")).is_err());
        assert!(JavaCommand::parse(&words("java -cp .")).is_err());
        assert!(JavaCommand::parse(&words("/bin/ls -l")).is_err());
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used() {
        let dir = std::env::temp_dir().join(format!("astraea-warm-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let w = dir.clone();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        for i in 0..KEEP + 2 {
            let p = w.join(format!("{i}.snap"));
            let f = std::fs::File::create(&p).unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        // The oldest, used again, stays.
        touch(&w.join("0.snap"));
        prune_in(&w, 1);
        let mut left: Vec<String> = std::fs::read_dir(&w)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), KEEP - 1, "{left:?}");
        assert!(left.contains(&"0.snap".to_string()), "{left:?}");
        assert!(!left.contains(&"1.snap".to_string()), "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keys_differ_with_the_command() {
        let k = Path::new("/nonexistent-kernel");
        let a = snapshot_path(&words("java -cp a"), k);
        assert_eq!(a, snapshot_path(&words("java -cp a"), k));
        assert_ne!(a, snapshot_path(&words("java -cp b"), k));
        assert_ne!(
            snapshot_path(&words("java -cp ab"), k),
            snapshot_path(&words("java -cp a b"), k)
        );
    }
}
