//! The search application of issue 13 (`bench/search/`, docs/search.md):
//! Lucene 9.12.3 shard indexes, shard servers, the front end, the bench
//! driver and the command-line searcher, over the small checked-in corpus
//! `tests/search/corpus.tsv` and its 50 queries `tests/search/queries.txt`.
//!
//! * On the host (JDK 17): the indexer builds 2 shards; 2 shard servers and
//!   the front end run on ephemeral ports; the bench driver's answers (4
//!   clients, 2 passes) must equal, byte for byte, `SearchCli`'s direct
//!   in-process search over the same shards merged the same way — so the
//!   HTTP protocol, the fan-out and the merge are exact.
//! * In a partition (JDK 17 and JDK 25, no sockets needed): the indexer
//!   builds the shards, and `SearchCli` over them on the host must print
//!   exactly what it prints over the host-built shards; `SearchCli` run in a
//!   partition over the host-built shards must print it too.
//!
//! The jars come from `./x javalibs search` (run by the test when missing).
//! Without mvn or Maven Central, a JDK, or `/dev/kvm` a test says so loudly
//! and passes.

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::{Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    const TIMEOUT: Duration = Duration::from_secs(240);
    const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";
    const JDK25: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

    fn skip(why: &str) {
        eprintln!("\n*** SKIPPED: {why}; this test did not run. ***\n");
    }

    fn root() -> &'static Path {
        static R: OnceLock<PathBuf> = OnceLock::new();
        R.get_or_init(|| scratch_root("search-app-tests"))
    }

    fn corpus() -> PathBuf {
        workspace().join("tests/search/corpus.tsv")
    }

    fn queries() -> PathBuf {
        workspace().join("tests/search/queries.txt")
    }

    /// The Lucene jars (`target/javalibs/search`), fetched once if missing.
    fn jars() -> Option<PathBuf> {
        static FETCH: Mutex<bool> = Mutex::new(false);
        let dir = workspace().join("target/javalibs/search");
        let done = |d: &Path| d.join(".complete").is_file();
        if !done(&dir) {
            let mut tried = FETCH.lock().unwrap_or_else(|e| e.into_inner());
            if !*tried && !done(&dir) {
                *tried = true;
                let st = Command::new("bash")
                    .arg(workspace().join("x"))
                    .args(["javalibs", "search"])
                    .current_dir(workspace())
                    .stdin(Stdio::null())
                    .status();
                eprintln!("./x javalibs search: {st:?}");
            }
        }
        if done(&dir) {
            Some(dir)
        } else {
            skip(
                "the Lucene jars are not in target/javalibs/search (./x javalibs needs mvn and Maven Central)",
            );
            None
        }
    }

    /// The compiled application (javac of JDK 17, release 17), once.
    fn classes() -> Option<&'static Path> {
        static C: OnceLock<Option<PathBuf>> = OnceLock::new();
        C.get_or_init(|| {
            if !Path::new(JDK17).join("bin/javac").is_file() {
                skip(&format!("JDK 17 (with javac) is not at {JDK17}"));
                return None;
            }
            let jars = jars()?;
            let out = root().join("classes");
            std::fs::create_dir_all(&out).unwrap();
            let mut srcs: Vec<PathBuf> = std::fs::read_dir(workspace().join("bench/search/java"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "java"))
                .collect();
            srcs.sort();
            let o = Command::new(Path::new(JDK17).join("bin/javac"))
                .args(["--release", "17", "-Xlint:all", "-Werror", "-cp"])
                .arg(format!("{}/*", jars.display()))
                .arg("-d")
                .arg(&out)
                .args(&srcs)
                .output()
                .expect("cannot run javac");
            assert!(
                o.status.success(),
                "javac failed:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(out)
        })
        .as_deref()
    }

    /// `java` arguments: class path (classes + jars), main class, arguments.
    fn java_args(main: &str, args: &[String]) -> Vec<String> {
        let jars = workspace().join("target/javalibs/search");
        let mut a = vec![
            "-cp".to_string(),
            format!(
                "{}:{}/*",
                classes().expect("classes").display(),
                jars.display()
            ),
            main.to_string(),
        ];
        a.extend_from_slice(args);
        a
    }

    fn host(jdk: &str, dir: &Path, main: &str, args: &[String]) -> Run {
        let mut c = Command::new(Path::new(jdk).join("bin/java"));
        c.args(java_args(main, args)).current_dir(dir);
        run_with_timeout(&mut c, TIMEOUT)
    }

    fn partition(jdk: &str, dir: &Path, main: &str, args: &[String]) -> Run {
        let mut c = Command::new(astraea());
        c.args(["run", "--mem", "1G", "--"])
            .arg(Path::new(jdk).join("bin/java"))
            .args(java_args(main, args))
            .current_dir(dir);
        run_with_timeout(&mut c, TIMEOUT)
    }

    fn ok(ctx: &str, r: &Run) {
        let lines: Vec<&str> = r.stderr.lines().collect();
        assert_eq!(
            r.code,
            0,
            "{ctx} failed:\n{}\n--- stderr (end) ---\n{}",
            r.stdout,
            lines[lines.len().saturating_sub(60)..].join("\n")
        );
    }

    fn workdir(name: &str) -> PathBuf {
        let d = root().join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn index_args(out: &Path) -> Vec<String> {
        vec![
            "--corpus".into(),
            corpus().display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--shards".into(),
            "2".into(),
        ]
    }

    fn cli_args(index: &Path, dir: &str) -> Vec<String> {
        vec![
            "--index".into(),
            format!(
                "{},{}",
                index.join("shard-0").display(),
                index.join("shard-1").display()
            ),
            "--queries".into(),
            queries().display().to_string(),
            "--dir".into(),
            dir.into(),
        ]
    }

    /// The host reference: JDK 17 indexes the corpus into 2 shards; the
    /// indexer's stdout, the index, and SearchCli's answers over it.
    struct Reference {
        index: PathBuf,
        indexer: String,
        answers: String,
    }

    fn reference() -> Option<&'static Reference> {
        static R: OnceLock<Option<Reference>> = OnceLock::new();
        R.get_or_init(|| {
            classes()?;
            let dir = workdir("host-ref");
            let index = dir.join("index");
            let ix = host(JDK17, &dir, "SearchIndexer", &index_args(&index));
            ok("the host indexer", &ix);
            let cli = host(JDK17, &dir, "SearchCli", &cli_args(&index, "mmap"));
            ok("SearchCli on the host", &cli);
            // Sanity: the corpus is really split, and most queries find hits
            // in both shards.
            let total: u64 = ix
                .stdout
                .lines()
                .filter_map(|l| l.strip_prefix("shard "))
                .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
                .sum();
            assert!(ix.stdout.contains("malformed 0"), "{}", ix.stdout);
            assert!(
                ix.stdout.contains(&format!("documents {total} ")),
                "{}",
                ix.stdout
            );
            let hits: Vec<&str> = cli.stdout.lines().filter(|l| !l.starts_with('#')).collect();
            assert!(hits.iter().any(|l| l.starts_with("0\t")), "{}", cli.stdout);
            assert!(hits.iter().any(|l| l.starts_with("1\t")), "{}", cli.stdout);
            assert!(hits.len() > 200, "too few hits:\n{}", cli.stdout);
            assert!(cli.stdout.contains("queries 50 digest "), "{}", cli.stdout);
            Some(Reference {
                index,
                indexer: ix.stdout,
                answers: cli.stdout,
            })
        })
        .as_ref()
    }

    /// A server process, killed when dropped.
    struct Server(Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Starts `main` on the host JDK 17 and returns it with the port it
    /// printed ("listening PORT").
    fn start(dir: &Path, main: &str, args: &[String]) -> (Server, u16) {
        let mut c = Command::new(Path::new(JDK17).join("bin/java"));
        c.args(java_args(main, args))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = Server(c.spawn().expect("cannot start java"));
        let out = child.0.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("{main} did not say where it listens: {line:?}"))
            .parse()
            .unwrap();
        (child, port)
    }

    #[test]
    fn host_shards_and_front_end_match_direct_search() {
        let Some(r) = reference() else { return };
        let dir = workdir("host-servers");
        let mut shards = Vec::new();
        let mut addrs = Vec::new();
        for (s, kind) in [(0, "mmap"), (1, "nio")] {
            let (srv, port) = start(
                &dir,
                "ShardServer",
                &[
                    "--index".into(),
                    r.index.join(format!("shard-{s}")).display().to_string(),
                    "--shard".into(),
                    s.to_string(),
                    "--dir".into(),
                    kind.into(),
                ],
            );
            shards.push(srv);
            addrs.push(format!("127.0.0.1:{port}"));
        }
        let (_front, port) = start(&dir, "FrontEnd", &["--shards".into(), addrs.join(",")]);
        answers_as_direct_search(r, &dir, port, "host servers");
    }

    /// SearchBench (4 clients, 2 passes) against the front end on `port`
    /// must answer exactly what SearchCli answers over the same shards, with
    /// no errors, no answer changing between passes, and the same digest.
    fn answers_as_direct_search(r: &Reference, dir: &Path, port: u16, what: &str) {
        let out = dir.join(format!("answers-{}.txt", what.replace(' ', "-")));
        let t0 = Instant::now();
        let bench = host(
            JDK17,
            dir,
            "SearchBench",
            &[
                "--url".into(),
                format!("http://127.0.0.1:{port}"),
                "--queries".into(),
                queries().display().to_string(),
                "--concurrency".into(),
                "4".into(),
                "--passes".into(),
                "2".into(),
                "--out".into(),
                out.display().to_string(),
            ],
        );
        ok(&format!("the bench driver ({what})"), &bench);
        eprintln!(
            "bench ({what}, {:.1?}): {}",
            t0.elapsed(),
            bench.stdout.trim()
        );
        assert!(
            bench.stdout.contains(" errors 0 unstable 0 "),
            "{what}: {}",
            bench.stdout
        );
        let answers = std::fs::read_to_string(&out).unwrap();
        assert!(
            answers == r.answers,
            "{what}: the front end's answers differ from the direct search:\n--- front end ---\n{answers}\n--- direct ---\n{}",
            r.answers
        );
        let digest = r
            .answers
            .lines()
            .last()
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap();
        assert!(bench.stdout.contains(digest), "{what}: {}", bench.stdout);
    }

    fn ready(jdk: &str) -> Option<&'static Reference> {
        if !Path::new(jdk).join("bin/java").is_file() {
            skip(&format!("no JDK at {jdk}"));
            return None;
        }
        if !kvm_available() {
            return None;
        }
        reference()
    }

    /// The indexer in a partition: same shard counts, and the same answers
    /// (SearchCli on the host over the partition-built index).
    fn indexer_in_partition(name: &str, jdk: &str) {
        let Some(r) = ready(jdk) else { return };
        let dir = workdir(&format!("partition-index-{name}"));
        let index = dir.join("index");
        let t0 = Instant::now();
        let ix = partition(jdk, &dir, "SearchIndexer", &index_args(&index));
        eprintln!("indexer in a partition on JDK {name}: {:.1?}", t0.elapsed());
        ok(&format!("the indexer in a partition (JDK {name})"), &ix);
        assert_eq!(ix.stdout, r.indexer, "JDK {name}: shard counts differ");
        let cli = host(JDK17, &dir, "SearchCli", &cli_args(&index, "nio"));
        ok("SearchCli on the host", &cli);
        assert!(
            cli.stdout == r.answers,
            "JDK {name}: answers over the partition-built index differ:\n--- partition-built ---\n{}\n--- host-built ---\n{}",
            cli.stdout,
            r.answers
        );
    }

    /// SearchCli in a partition over the host-built index (read-only).
    fn cli_in_partition(name: &str, jdk: &str, kind: &str) {
        let Some(r) = ready(jdk) else { return };
        let dir = workdir(&format!("partition-cli-{name}-{kind}"));
        let cli = partition(jdk, &dir, "SearchCli", &cli_args(&r.index, kind));
        ok(&format!("SearchCli in a partition (JDK {name})"), &cli);
        assert!(
            cli.stdout == r.answers,
            "JDK {name} ({kind}): answers in the partition differ:\n--- partition ---\n{}\n--- host ---\n{}",
            cli.stdout,
            r.answers
        );
    }

    #[test]
    fn indexer_in_partition_jdk17() {
        indexer_in_partition("17", JDK17);
    }

    #[test]
    fn indexer_in_partition_jdk25() {
        indexer_in_partition("25", JDK25);
    }

    #[test]
    fn search_cli_in_partition_jdk17_mmap() {
        cli_in_partition("17", JDK17, "mmap");
    }

    #[test]
    fn search_cli_in_partition_jdk25_nio() {
        cli_in_partition("25", JDK25, "nio");
    }
    /// A running `astraea deploy`: its stderr lines as they come.
    struct Deployment {
        child: Child,
        lines: std::sync::mpsc::Receiver<String>,
        seen: String,
        logs: PathBuf,
        port: u16,
    }

    impl Deployment {
        fn start(name: &str, jdk: &str, extra: &[&str]) -> Option<Self> {
            let r = reference()?;
            // `astraea deploy` runs the astraea-gateway next to astraea:
            // build it there (it is, with ./x test).
            let gw = gateway();
            assert_eq!(
                gw.parent(),
                astraea().parent(),
                "{gw:?} is not next to astraea"
            );
            let dir = workdir(&format!("deploy-{name}"));
            let logs = dir.join("logs");
            let base = free_ports(3);
            let cp = format!(
                "{}:{}/*",
                classes()?.display(),
                workspace().join("target/javalibs/search").display()
            );
            let sets = [
                format!("ROOT={}", workspace().display()),
                format!("CP={cp}"),
                format!("INDEX={}", r.index.display()),
                "SHARDS=2".into(),
                format!("JDK={jdk}"),
                format!("LOGS={}", logs.display()),
                format!("BASE_PORT={base}"),
                format!("PORT={}", base + 2),
            ];
            let mut c = Command::new(astraea());
            c.args(["deploy"])
                .arg(workspace().join("bench/search/deploy.toml"));
            for s in &sets {
                c.arg("--set").arg(s);
            }
            c.args(extra)
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child = c.spawn().expect("cannot start astraea deploy");
            let err = child.stderr.take().unwrap();
            let (tx, lines) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for l in BufReader::new(err).lines().map_while(Result::ok) {
                    eprintln!("[deploy] {l}");
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            });
            Some(Self {
                child,
                lines,
                seen: String::new(),
                logs,
                port: base + 2,
            })
        }

        /// Waits for a stderr line containing `text`.
        fn wait_for(&mut self, text: &str) {
            self.wait_all(&[text]);
        }

        /// Waits until stderr has had a line containing each of `texts`
        /// (in any order) since the call.
        fn wait_all(&mut self, texts: &[&str]) {
            let deadline = Instant::now() + TIMEOUT;
            let mut left: Vec<&str> = texts.to_vec();
            while !left.is_empty() {
                let time = deadline.saturating_duration_since(Instant::now());
                match self.lines.recv_timeout(time) {
                    Ok(l) => {
                        self.seen += &l;
                        self.seen.push('\n');
                        left.retain(|t| !l.contains(t));
                    }
                    Err(_) => panic!(
                        "astraea deploy never said {left:?}; it said:\n{}",
                        self.seen
                    ),
                }
            }
        }

        /// Waits until the status file shows every member ready.
        fn all_ready(&self) {
            let deadline = Instant::now() + TIMEOUT;
            loop {
                let s = std::fs::read_to_string(self.logs.join("status")).unwrap_or_default();
                let states: Vec<&str> = s
                    .lines()
                    .skip(1)
                    .filter_map(|l| l.split_whitespace().nth(3))
                    .collect();
                if !states.is_empty() && states.iter().all(|st| *st == "ready") {
                    return;
                }
                assert!(Instant::now() < deadline, "not all ready:\n{s}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }

        /// SearchBench against the front end must print the host's answers.
        fn answers_as_the_host(&self, r: &Reference, what: &str) {
            answers_as_direct_search(r, self.logs.parent().unwrap(), self.port, what);
        }

        /// The PID of member `name` from the status file.
        fn pid_of(&self, name: &str) -> String {
            let status = std::fs::read_to_string(self.logs.join("status")).unwrap();
            status
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .and_then(|l| l.split_whitespace().nth(2))
                .unwrap_or_else(|| panic!("no {name} in the status file:\n{status}"))
                .to_string()
        }

        /// SIGTERM: every member stops through its shutdown hook, exit 0.
        fn stop(mut self) {
            let st = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(st.success());
            for m in ["frontend", "shard-1", "shard-0"] {
                self.wait_for(&format!("{m} stopped (status 143)"));
                let log = std::fs::read_to_string(self.logs.join(format!("{m}.log"))).unwrap();
                assert!(
                    log.trim_end().ends_with("stopped"),
                    "{m}'s shutdown hook did not run:\n{log}"
                );
            }
            let st = self.child.wait().unwrap();
            assert_eq!(st.code(), Some(0), "astraea deploy:\n{}", self.seen);
        }
    }

    impl Drop for Deployment {
        fn drop(&mut self) {
            // A failed test must not leave partitions behind.
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.child.kill();
        }
    }

    /// `astraea deploy` of bench/search/deploy.toml on partitions (a shared
    /// vhost-user gateway, JDK 17): 2 shards + front end answer exactly as
    /// the direct search; `astraea ps` lists them by name; a shard partition
    /// killed with SIGKILL is restarted and the front end answers exactly
    /// again; so does the deployment after its gateway is killed; SIGTERM
    /// stops all three through their shutdown hooks.
    #[test]
    fn deployment_on_partitions_answers_as_the_host_and_recovers_a_killed_shard() {
        let Some(r) = ready(JDK17) else { return };
        let Some(mut d) = Deployment::start("partitions", JDK17, &[]) else {
            return;
        };
        d.wait_for("search ready: 3 members");
        d.answers_as_the_host(r, "first");
        let ps = astraea_cmd(&["ps"]);
        for (name, role) in [
            ("shard-0", "shard"),
            ("shard-1", "shard"),
            ("frontend", "frontend"),
        ] {
            assert!(
                ps.stdout.lines().any(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    w.get(1) == Some(&name) && w.get(2) == Some(&role)
                }),
                "astraea ps does not list {name} as a {role}:\n{}",
                ps.stdout
            );
        }
        let victim = d.pid_of("shard-1");
        let st = Command::new("kill")
            .args(["-KILL", &victim])
            .status()
            .unwrap();
        assert!(st.success());
        d.wait_for("shard-1 exited (killed by signal 9)");
        d.wait_for("restarting shard-1");
        d.wait_for("shard-1 ready in");
        assert_ne!(d.pid_of("shard-1"), victim);
        d.answers_as_the_host(r, "after the restart");
        // The shared gateway dies: its partitions lose their files and
        // sockets, exit, and come back with a new gateway.
        let gw = d.pid_of("gateway");
        let st = Command::new("kill").args(["-KILL", &gw]).status().unwrap();
        assert!(st.success());
        d.wait_for("the shared gateway exited (killed by signal 9); starting it again");
        d.wait_all(&["shard-0 ready in", "shard-1 ready in", "frontend ready in"]);
        d.all_ready();
        assert_ne!(d.pid_of("gateway"), gw);
        d.answers_as_the_host(r, "after the gateway died");
        d.stop();
    }

    /// The same file with `gateway = "per-partition"` on JDK 25, and with
    /// `--host` (host JVMs): the same answers.
    #[test]
    fn deployment_per_partition_gateway_jdk25_and_on_the_host() {
        let Some(r) = ready(JDK25) else { return };
        let Some(mut d) = Deployment::start(
            "per-partition",
            JDK25,
            &["--set", "GATEWAY=per-partition", "--set", "STORE=nio"],
        ) else {
            return;
        };
        d.wait_for("search ready: 3 members");
        d.answers_as_the_host(r, "per-partition gateway, JDK 25");
        d.stop();
        let Some(mut h) = Deployment::start("host", JDK17, &["--host"]) else {
            return;
        };
        h.wait_for("search ready: 3 members");
        h.answers_as_the_host(r, "host JVMs");
        h.stop();
    }
}
