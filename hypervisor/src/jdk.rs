//! Finding the program a partition runs, the way a user expects from a shell:
//! the JDK for a bare `java` (`--jdk DIR`, else `$JAVA_HOME`, else `java` on
//! `PATH`), and any other bare program name on `PATH`.
//!
//! The partition loads the JVM's libraries relative to the real path of
//! `java` (ld.so expands `$ORIGIN` from `/proc/self/exe`, the launcher finds
//! `lib/` from it), so a JDK's `java` is resolved through its symlinks:
//! `/usr/bin/java` → `/etc/alternatives/java` →
//! `/usr/lib/jvm/java-17-openjdk-amd64/bin/java`.
//!
//! Everything here is a pure function of its inputs (the `--jdk` option, the
//! values of `JAVA_HOME` and `PATH`, the current directory), so it is tested
//! with temporary directories rather than the host's environment.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The program name that selects a JDK.
pub const JAVA: &str = "java";

/// Why no program could be chosen. Each message says where Astraea looked and
/// how to fix it; [`JdkError::exit_code`] is the shell's "command not found".
#[derive(Debug, thiserror::Error)]
pub enum JdkError {
    /// `java` was asked for and no JDK was found anywhere.
    #[error(
        "no JDK found: looked in {looked}. Install one (e.g. `apt-get install \
         openjdk-17-jdk-headless`), or name it with --jdk DIR or JAVA_HOME=DIR, where DIR \
         holds bin/java (e.g. /usr/lib/jvm/java-17-openjdk-amd64)"
    )]
    NotFound {
        /// The places searched, in order, each with what was found there.
        looked: String,
    },
    /// `--jdk DIR` names no usable JDK. It was asked for explicitly, so
    /// Astraea does not fall back to another one.
    #[error(
        "--jdk {}: {reason}. Name the JDK's top directory, the one that holds bin/java \
         (e.g. --jdk /usr/lib/jvm/java-17-openjdk-amd64)",
        dir.display()
    )]
    BadJdkDir {
        /// The directory given.
        dir: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `--jdk DIR` was given with a program that is not one of the JDK's tools.
    #[error(
        "--jdk {} was given, but the program {program:?} is not in its bin/. Write \
         `-- java …` (or leave the program out: `-- -version`), or drop --jdk to run \
         another program",
        dir.display()
    )]
    NotAJdkTool {
        /// The JDK directory given.
        dir: PathBuf,
        /// The program named after `--`.
        program: String,
    },
}

impl JdkError {
    /// The `astraea` exit status for this error: 127, as a shell gives for a
    /// command it cannot find.
    pub fn exit_code(&self) -> u8 {
        127
    }
}

/// Where a JDK was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JdkSource {
    /// `--jdk DIR`.
    Flag,
    /// `$JAVA_HOME`.
    JavaHome,
    /// `java` on `PATH`.
    Path,
}

/// A JDK's `java`, found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundJava {
    /// The real, absolute path of the `java` binary (symlinks resolved).
    pub java: PathBuf,
    /// The JDK's top directory (the parent of `bin/`).
    pub home: PathBuf,
    /// Where it was found.
    pub source: JdkSource,
    /// Things the user should know that did not stop the search (a
    /// `JAVA_HOME` that holds no `java`, say), one line each.
    pub warnings: Vec<String>,
}

/// What the lookup may consult, passed in rather than read from the process
/// so that tests can set it.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// The value of `--jdk`, if given.
    pub jdk: Option<PathBuf>,
    /// The value of `JAVA_HOME`, if set.
    pub java_home: Option<OsString>,
    /// The value of `PATH`, if set.
    pub path: Option<OsString>,
    /// The current directory, for relative `PATH` entries and `--jdk` values.
    pub cwd: PathBuf,
}

impl Environment {
    /// This process's environment, with `jdk` from the command line.
    pub fn from_process(jdk: Option<PathBuf>) -> Self {
        Self {
            jdk,
            java_home: std::env::var_os("JAVA_HOME").filter(|v| !v.is_empty()),
            path: std::env::var_os("PATH"),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }
}

/// The outcome of [`resolve_program`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The arguments to hand to the partition: `argv[0]` is now a path.
    pub args: Vec<String>,
    /// The JDK, when one was chosen.
    pub jdk: Option<FoundJava>,
    /// Warnings for the user, one line each.
    pub warnings: Vec<String>,
}

/// Whether `p` is a regular file (after symlinks) someone may execute.
fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A bare program name: no `/` and not empty (a shell searches `PATH` only
/// for these).
pub fn is_bare(program: &str) -> bool {
    !program.is_empty() && !program.contains('/')
}

/// The directories of a `PATH` value, absolute; an empty entry means the
/// current directory, as POSIX says.
fn path_dirs(path: &OsStr, cwd: &Path) -> Vec<PathBuf> {
    std::env::split_paths(path)
        .map(|d| {
            if d.as_os_str().is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(d)
            }
        })
        .collect()
}

/// The first executable `name` in `PATH`, absolute but with its symlinks
/// left alone (as a shell runs it).
pub fn search_path(name: &str, path: Option<&OsStr>, cwd: &Path) -> Option<PathBuf> {
    path_dirs(path?, cwd)
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// `dir/bin/java`, resolved, or why not.
fn java_in(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    if !dir.is_dir() {
        return Err(if dir.exists() {
            "not a directory".into()
        } else {
            "no such directory".into()
        });
    }
    let java = dir.join("bin").join(JAVA);
    if !is_executable(&java) {
        return Err(format!("{} is missing or not executable", java.display()));
    }
    let real = std::fs::canonicalize(&java)
        .map_err(|e| format!("cannot resolve {}: {e}", java.display()))?;
    Ok((real.clone(), home_of(&real)))
}

/// The JDK directory of a real `…/bin/java`.
fn home_of(java: &Path) -> PathBuf {
    java.parent()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf)
}

/// Finds the JDK's `java`: `--jdk DIR` (DIR/bin/java, no fallback if it is
/// wrong), else `$JAVA_HOME/bin/java` (with a warning and a fallback to
/// `PATH` if it holds none, as the host's `java` command ignores it), else
/// the first `java` on `PATH`. The result has its symlinks resolved.
pub fn find_java(env: &Environment) -> Result<FoundJava, JdkError> {
    if let Some(dir) = &env.jdk {
        let abs = env.cwd.join(dir);
        return java_in(&abs)
            .map(|(java, home)| FoundJava {
                java,
                home,
                source: JdkSource::Flag,
                warnings: Vec::new(),
            })
            .map_err(|reason| JdkError::BadJdkDir {
                dir: dir.clone(),
                reason,
            });
    }
    let mut looked = vec!["--jdk (not given)".to_string()];
    let mut warnings = Vec::new();
    match &env.java_home {
        None => looked.push("JAVA_HOME (unset)".into()),
        Some(home) => {
            let dir = env.cwd.join(home);
            match java_in(&dir) {
                Ok((java, home)) => {
                    return Ok(FoundJava {
                        java,
                        home,
                        source: JdkSource::JavaHome,
                        warnings,
                    });
                }
                Err(why) => {
                    looked.push(format!("JAVA_HOME ({}: {why})", dir.display()));
                    warnings.push(format!(
                        "JAVA_HOME={} holds no JDK ({why}); looking for java on PATH instead",
                        Path::new(home).display()
                    ));
                }
            }
        }
    }
    match &env.path {
        None => looked.push("PATH (unset)".into()),
        Some(path) => {
            if let Some(found) = search_path(JAVA, Some(path), &env.cwd)
                && let Ok(java) = std::fs::canonicalize(&found)
            {
                let home = home_of(&java);
                return Ok(FoundJava {
                    java,
                    home,
                    source: JdkSource::Path,
                    warnings,
                });
            }
            let dirs: Vec<String> = path_dirs(path, &env.cwd)
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            looked.push(format!("PATH ({})", dirs.join(", ")));
        }
    }
    Err(JdkError::NotFound {
        looked: looked.join(", "),
    })
}

/// Chooses the program the partition runs from the arguments after `--`:
///
/// * With `--jdk DIR`: no program, or one that starts with `-`, means
///   `DIR/bin/java` with those arguments; `java` or another bare name that
///   is in `DIR/bin` becomes that tool's real path; anything else is an
///   error.
/// * Without it, a bare `java` becomes the JDK's real `java` ([`find_java`]),
///   and another bare name becomes its first executable match on `PATH`
///   (unchanged if there is none: the partition then reports it missing).
/// * A program given as a path is left alone.
pub fn resolve_program(args: &[String], env: &Environment) -> Result<Resolved, JdkError> {
    let mut args = args.to_vec();
    if let Some(dir) = &env.jdk {
        if args.first().is_none_or(|a| a.starts_with('-')) {
            args.insert(0, JAVA.into());
        }
        let program = &args[0];
        if !is_bare(program) {
            return Err(JdkError::NotAJdkTool {
                dir: dir.clone(),
                program: program.clone(),
            });
        }
        let found = find_java(env)?;
        if program != JAVA {
            let tool = found.home.join("bin").join(program);
            if !is_executable(&tool) {
                return Err(JdkError::NotAJdkTool {
                    dir: dir.clone(),
                    program: program.clone(),
                });
            }
            args[0] = std::fs::canonicalize(&tool)
                .unwrap_or(tool)
                .to_string_lossy()
                .into_owned();
        } else {
            args[0] = found.java.to_string_lossy().into_owned();
        }
        return Ok(Resolved {
            args,
            warnings: found.warnings.clone(),
            jdk: Some(found),
        });
    }
    match args.first().map(String::as_str) {
        Some(JAVA) => {
            let found = find_java(env)?;
            args[0] = found.java.to_string_lossy().into_owned();
            Ok(Resolved {
                args,
                warnings: found.warnings.clone(),
                jdk: Some(found),
            })
        }
        Some(p) if is_bare(p) => {
            if let Some(found) = search_path(p, env.path.as_deref(), &env.cwd) {
                args[0] = found.to_string_lossy().into_owned();
            }
            Ok(Resolved {
                args,
                ..Resolved::default()
            })
        }
        _ => Ok(Resolved {
            args,
            ..Resolved::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh temporary directory, removed on drop.
    struct Tmp(PathBuf);

    impl Tmp {
        fn new(name: &str) -> Self {
            static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let d =
                std::env::temp_dir().join(format!("astraea-jdk-{name}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Self(d.canonicalize().unwrap())
        }
    }

    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Creates an executable (or not) file with its parent directories.
    fn file(p: &Path, exec: bool) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        let mode = if exec { 0o755 } else { 0o644 };
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A fake JDK at `dir` with `bin/java` and `bin/javac`.
    fn jdk(dir: &Path) -> PathBuf {
        file(&dir.join("bin/java"), true);
        file(&dir.join("bin/javac"), true);
        dir.join("bin/java")
    }

    fn env(t: &Tmp) -> Environment {
        Environment {
            jdk: None,
            java_home: None,
            path: None,
            cwd: t.0.clone(),
        }
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn jdk_flag_wins_over_java_home_and_path() {
        let t = Tmp::new("flag");
        let flag = jdk(&t.0.join("flag"));
        jdk(&t.0.join("home"));
        jdk(&t.0.join("onpath"));
        let e = Environment {
            jdk: Some(t.0.join("flag")),
            java_home: Some(t.0.join("home").into()),
            path: Some(t.0.join("onpath/bin").into()),
            ..env(&t)
        };
        let f = find_java(&e).unwrap();
        assert_eq!(f.java, flag);
        assert_eq!(f.home, t.0.join("flag"));
        assert_eq!(f.source, JdkSource::Flag);
    }

    #[test]
    fn relative_jdk_flag_is_taken_from_the_current_directory() {
        let t = Tmp::new("relflag");
        let java = jdk(&t.0.join("j"));
        let e = Environment {
            jdk: Some("j".into()),
            ..env(&t)
        };
        assert_eq!(find_java(&e).unwrap().java, java);
    }

    #[test]
    fn bad_jdk_flag_is_an_error_without_fallback() {
        let t = Tmp::new("badflag");
        jdk(&t.0.join("onpath"));
        std::fs::create_dir_all(t.0.join("empty")).unwrap();
        let e = Environment {
            jdk: Some(t.0.join("empty")),
            path: Some(t.0.join("onpath/bin").into()),
            ..env(&t)
        };
        let err = find_java(&e).unwrap_err();
        assert!(matches!(err, JdkError::BadJdkDir { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("bin/java is missing"), "{msg}");
        assert!(msg.contains("--jdk /usr/lib/jvm/"), "{msg}");
        assert_eq!(err.exit_code(), 127);

        let e = Environment {
            jdk: Some(t.0.join("nonexistent")),
            ..env(&t)
        };
        assert!(
            find_java(&e)
                .unwrap_err()
                .to_string()
                .contains("no such directory")
        );
    }

    #[test]
    fn non_executable_java_is_not_a_jdk() {
        let t = Tmp::new("noexec");
        file(&t.0.join("j/bin/java"), false);
        let e = Environment {
            jdk: Some(t.0.join("j")),
            ..env(&t)
        };
        assert!(matches!(find_java(&e), Err(JdkError::BadJdkDir { .. })));
    }

    #[test]
    fn java_home_wins_over_path() {
        let t = Tmp::new("home");
        let home = jdk(&t.0.join("home"));
        jdk(&t.0.join("onpath"));
        let e = Environment {
            java_home: Some(t.0.join("home").into()),
            path: Some(t.0.join("onpath/bin").into()),
            ..env(&t)
        };
        let f = find_java(&e).unwrap();
        assert_eq!((f.java, f.source), (home, JdkSource::JavaHome));
        assert!(f.warnings.is_empty());
    }

    #[test]
    fn empty_java_home_falls_back_to_path_with_a_warning() {
        let t = Tmp::new("badhome");
        let onpath = jdk(&t.0.join("onpath"));
        std::fs::create_dir_all(t.0.join("home")).unwrap();
        let e = Environment {
            java_home: Some(t.0.join("home").into()),
            path: Some(t.0.join("onpath/bin").into()),
            ..env(&t)
        };
        let f = find_java(&e).unwrap();
        assert_eq!((f.java, f.source), (onpath, JdkSource::Path));
        assert_eq!(f.warnings.len(), 1);
        assert!(f.warnings[0].contains("JAVA_HOME="), "{:?}", f.warnings);
    }

    #[test]
    fn path_symlinks_are_resolved_to_the_real_jdk() {
        // /usr/bin/java → /etc/alternatives/java → /usr/lib/jvm/X/bin/java
        let t = Tmp::new("symlink");
        let real = jdk(&t.0.join("lib/jvm/x"));
        std::fs::create_dir_all(t.0.join("alternatives")).unwrap();
        std::fs::create_dir_all(t.0.join("usrbin")).unwrap();
        symlink(&real, t.0.join("alternatives/java")).unwrap();
        symlink("../alternatives/java", t.0.join("usrbin/java")).unwrap();
        let path = std::env::join_paths([t.0.join("nothing"), t.0.join("usrbin")]).unwrap();
        let e = Environment {
            path: Some(path),
            ..env(&t)
        };
        let f = find_java(&e).unwrap();
        assert_eq!(f.java, real);
        assert_eq!(f.home, t.0.join("lib/jvm/x"));
        assert_eq!(f.source, JdkSource::Path);
    }

    #[test]
    fn nothing_found_says_where_it_looked() {
        let t = Tmp::new("none");
        std::fs::create_dir_all(t.0.join("bin")).unwrap();
        file(&t.0.join("bin/java"), false);
        let path = std::env::join_paths([t.0.join("bin"), t.0.join("sbin")]).unwrap();
        let e = Environment {
            path: Some(path),
            ..env(&t)
        };
        let err = find_java(&e).unwrap_err();
        let msg = err.to_string();
        let want = format!(
            "no JDK found: looked in --jdk (not given), JAVA_HOME (unset), PATH ({}, {})",
            t.0.join("bin").display(),
            t.0.join("sbin").display()
        );
        assert!(msg.starts_with(&want), "{msg}\nwant: {want}");
        assert!(msg.contains("--jdk DIR or JAVA_HOME=DIR"), "{msg}");
        assert_eq!(err.exit_code(), 127);

        let e = Environment {
            java_home: Some(t.0.join("nohome").into()),
            ..env(&t)
        };
        let msg = find_java(&e).unwrap_err().to_string();
        assert!(msg.contains("JAVA_HOME ("), "{msg}");
        assert!(msg.contains("no such directory"), "{msg}");
        assert!(msg.contains("PATH (unset)"), "{msg}");
    }

    #[test]
    fn empty_path_entry_is_the_current_directory() {
        let t = Tmp::new("emptyentry");
        file(&t.0.join("tool"), true);
        let found = search_path("tool", Some(OsStr::new("/nonexistent:")), &t.0);
        assert_eq!(found, Some(t.0.join("tool")));
    }

    #[test]
    fn bare_java_is_replaced_by_the_jdk() {
        let t = Tmp::new("resolvejava");
        let java = jdk(&t.0.join("home"));
        let e = Environment {
            java_home: Some(t.0.join("home").into()),
            ..env(&t)
        };
        let r = resolve_program(&args(&["java", "-cp", ".", "Main"]), &e).unwrap();
        assert_eq!(r.args, args(&[java.to_str().unwrap(), "-cp", ".", "Main"]));
        assert_eq!(r.jdk.unwrap().source, JdkSource::JavaHome);
    }

    #[test]
    fn jdk_flag_supplies_java_when_the_program_is_left_out() {
        let t = Tmp::new("implicit");
        let java = jdk(&t.0.join("j"));
        let e = Environment {
            jdk: Some(t.0.join("j")),
            ..env(&t)
        };
        let java = java.to_str().unwrap();
        let r = resolve_program(&args(&["-version"]), &e).unwrap();
        assert_eq!(r.args, args(&[java, "-version"]));
        let r = resolve_program(&[], &e).unwrap();
        assert_eq!(r.args, args(&[java]));
        let r = resolve_program(&args(&["javac", "-help"]), &e).unwrap();
        assert_eq!(
            r.args,
            args(&[t.0.join("j/bin/javac").to_str().unwrap(), "-help"])
        );
        let err = resolve_program(&args(&["ls"]), &e).unwrap_err();
        assert!(matches!(err, JdkError::NotAJdkTool { .. }), "{err}");
        let err = resolve_program(&args(&["/bin/ls"]), &e).unwrap_err();
        assert!(matches!(err, JdkError::NotAJdkTool { .. }), "{err}");
    }

    #[test]
    fn other_bare_programs_are_searched_on_path_without_resolving_links() {
        let t = Tmp::new("otherbare");
        file(&t.0.join("real/tool"), true);
        std::fs::create_dir_all(t.0.join("bin")).unwrap();
        symlink(t.0.join("real/tool"), t.0.join("bin/tool")).unwrap();
        file(&t.0.join("bin/notexec"), false);
        let e = Environment {
            path: Some(t.0.join("bin").into()),
            ..env(&t)
        };
        let r = resolve_program(&args(&["tool", "x"]), &e).unwrap();
        assert_eq!(r.args, args(&[t.0.join("bin/tool").to_str().unwrap(), "x"]));
        assert!(r.jdk.is_none());
        // Not found, not executable, or a path: left for the partition.
        for a in [&["missing"][..], &["notexec"], &["./tool"], &["/abs/tool"]] {
            assert_eq!(resolve_program(&args(a), &e).unwrap().args, args(a));
        }
        assert!(resolve_program(&[], &e).unwrap().args.is_empty());
    }

    #[test]
    fn bare_names() {
        assert!(is_bare("java"));
        assert!(!is_bare("./java"));
        assert!(!is_bare("/usr/bin/java"));
        assert!(!is_bare(""));
    }
}
