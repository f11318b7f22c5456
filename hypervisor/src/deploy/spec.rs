//! The deployment file: what `astraea deploy FILE` runs.
//!
//! ```toml
//! [deployment]
//! name = "search"
//! jdk = "/usr/lib/jvm/java-17-openjdk-amd64"
//! gateway = "shared"            # or "per-partition" (each VMM's built-in one)
//! mem = "1G"                    # defaults for every partition …
//!
//! [vars]
//! CP = "${DIR}/classes:${DIR}/lib/*"
//!
//! [[partition]]
//! name = "shard-0"
//! role = "shard"
//! command = ["java", "-cp", "${CP}", "ShardServer", "--port", "9100"]
//! ready = "http://127.0.0.1:9100/ping"
//!
//! [[partition]]
//! name = "frontend"
//! after = ["shard-0"]
//! command = ["java", "-cp", "${CP}", "FrontEnd", "--shards", "127.0.0.1:9100"]
//! ```
//!
//! `${NAME}` in any string is replaced by a `--set NAME=VALUE`, else a
//! `[vars]` entry (which may use the others), else the environment; `${DIR}`
//! is the file's directory and `${PARTITION}` the partition's name. An
//! unknown name is an error, as is an unknown key (a typo must not be
//! silently ignored).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// Why a deployment file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not have the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (line and column included).
        message: String,
    },
    /// The file parses but says something impossible.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    deployment: RawSettings,
    #[serde(default)]
    vars: BTreeMap<String, String>,
    #[serde(default)]
    partition: Vec<RawPartition>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSettings {
    name: String,
    log_dir: Option<String>,
    jdk: Option<String>,
    gateway: Option<String>,
    ready_timeout: Option<u64>,
    stop_timeout: Option<u64>,
    #[serde(flatten)]
    defaults: RawDefaults,
}

/// What a partition may set and the deployment may default.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawDefaults {
    mem: Option<String>,
    cache: Option<String>,
    net_stream: Option<String>,
    net: Option<Vec<String>>,
    mounts: Option<Vec<String>>,
    restart: Option<String>,
    astraea_args: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPartition {
    name: String,
    count: Option<String>,
    role: Option<String>,
    command: Vec<String>,
    ready: Option<String>,
    #[serde(default)]
    after: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(flatten)]
    settings: RawDefaults,
}

/// Where the partitions' files (and sockets) come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayMode {
    /// Each partition's VMM serves its own 9P device (the default).
    PerPartition,
    /// One `astraea-gateway --vhost-user --keep-listening` process serves
    /// every partition; the exports (the JDK, the index) are opened once.
    Shared,
}

/// When a member that exits is started again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Whenever it exits (while the deployment is not stopping).
    Always,
    /// When it exits with a non-zero status or is killed (the default).
    OnFailure,
    /// Never.
    Never,
}

/// How the deployment knows a member is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// As soon as it is started.
    Started,
    /// `GET http://HOST:PORT/PATH` answers 200.
    Http {
        /// `HOST:PORT`.
        addr: String,
        /// The path, from `/`.
        path: String,
    },
    /// A TCP connection to `HOST:PORT` is accepted.
    Tcp(String),
    /// Its output (stdout or stderr) has a line containing this text.
    Log(String),
}

/// One JVM (or program) of the deployment.
#[derive(Debug, Clone)]
pub struct Member {
    /// Unique name (`astraea ps` shows it; its log is `NAME.log`).
    pub name: String,
    /// The `[[partition]]` name it comes from (`NAME` of `NAME-I` when
    /// counted; `after` may name it).
    pub group: String,
    /// What it is for (shard, frontend …), for status lines.
    pub role: String,
    /// The program and its arguments (`java` is the deployment's JDK).
    pub command: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// When it counts as ready.
    pub ready: Ready,
    /// Members that must be ready before it starts.
    pub after: Vec<String>,
    /// Partition memory (`--mem`).
    pub mem: String,
    /// File cache policy (`--cache`), if set.
    pub cache: Option<String>,
    /// Socket streaming (`--net-stream on|off`).
    pub net_stream: String,
    /// Network policy (`--net`), repeatable.
    pub net: Vec<String>,
    /// Exports (`--mount HOST[:GUEST][:ro|:rw][:cache|:nocache]`); empty:
    /// the host's `/` read-only and the current directory read-write (no
    /// shared `/tmp`: each member's JVM would remove the others'
    /// `hsperfdata` files there, seeing no other process alive).
    pub mounts: Vec<String>,
    /// Restart policy.
    pub restart: Restart,
    /// More `astraea run` options, given as they are.
    pub astraea_args: Vec<String>,
}

/// A parsed, checked deployment file.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The deployment's name.
    pub name: String,
    /// Where per-member logs and the status file go.
    pub log_dir: PathBuf,
    /// The JDK whose `java` runs (`--jdk`), if set.
    pub jdk: Option<PathBuf>,
    /// Per-partition or shared gateway.
    pub gateway: GatewayMode,
    /// How long a member may take to become ready.
    pub ready_timeout: Duration,
    /// How long a member may take to stop after SIGTERM before SIGKILL.
    pub stop_timeout: Duration,
    /// The members, in the file's order.
    pub members: Vec<Member>,
}

impl Spec {
    /// Reads and checks `path`, with `sets` (`NAME=VALUE`) overriding
    /// `[vars]` and the environment.
    pub fn load(path: &Path, sets: &[(String, String)]) -> Result<Self, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text, sets)
    }

    /// Parses `text` as the file `path` (used for messages and `${DIR}`).
    pub fn parse(path: &Path, text: &str, sets: &[(String, String)]) -> Result<Self, SpecError> {
        let invalid = |message: String| SpecError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| SpecError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let mut vars: BTreeMap<String, String> = BTreeMap::new();
        vars.insert("DIR".into(), dir.to_string_lossy().into_owned());
        for (k, v) in sets {
            vars.insert(k.clone(), v.clone());
        }
        // [vars] in order of dependence: each may use those already known.
        let mut todo: Vec<(&String, &String)> = raw
            .vars
            .iter()
            .filter(|(k, _)| !sets.iter().any(|(s, _)| s == *k))
            .collect();
        while !todo.is_empty() {
            let before = todo.len();
            let mut last_err = None;
            todo.retain(|(k, v)| match expand(v, &vars) {
                Ok(x) => {
                    vars.insert((*k).clone(), x);
                    false
                }
                Err(e) => {
                    last_err = Some(format!("[vars] {k}: {e}"));
                    true
                }
            });
            if todo.len() == before {
                return Err(invalid(last_err.unwrap_or_default()));
            }
        }
        let s = &raw.deployment;
        if s.name.is_empty() {
            return Err(invalid("[deployment] name is empty".into()));
        }
        let x = |v: &str| expand(v, &vars).map_err(|e| invalid(format!("[deployment]: {e}")));
        let log_dir = match &s.log_dir {
            Some(d) => dir.join(x(d)?),
            None => dir.join(format!("{}.logs", s.name)),
        };
        let gateway = match x(s.gateway.as_deref().unwrap_or("per-partition"))?.as_str() {
            "per-partition" => GatewayMode::PerPartition,
            "shared" => GatewayMode::Shared,
            g => {
                return Err(invalid(format!(
                    "[deployment] gateway = {g:?}: write \"per-partition\" or \"shared\""
                )));
            }
        };
        let mut members: Vec<Member> = Vec::new();
        if raw.partition.is_empty() {
            return Err(invalid("no [[partition]]: nothing to deploy".into()));
        }
        for p in &raw.partition {
            let group = format!("partition {:?}", p.name);
            if p.name.is_empty()
                || !p
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            {
                return Err(invalid(format!(
                    "{group}: a name is letters, digits, '-', '_' and '.'"
                )));
            }
            // `count = N`: instances NAME-0 … NAME-(N-1), ${I} their index.
            let count = match &p.count {
                None => None,
                Some(c) => {
                    let c = expand(c, &vars).map_err(|e| invalid(format!("{group}: {e}")))?;
                    match c.parse::<usize>() {
                        Ok(n) if (1..=1000).contains(&n) => Some(n),
                        _ => {
                            return Err(invalid(format!(
                                "{group}: count = {c:?}: write a number from 1 to 1000"
                            )));
                        }
                    }
                }
            };
            // `after` may name a counted group: all its instances.
            let mut after = Vec::new();
            for a in &p.after {
                let group_members: Vec<String> = members
                    .iter()
                    .filter(|m| &m.name == a || &m.group == a)
                    .map(|m| m.name.clone())
                    .collect();
                if group_members.is_empty() {
                    return Err(invalid(format!(
                        "{group}: after = {a:?}, which is not a partition listed before it"
                    )));
                }
                after.extend(group_members);
            }
            for index in 0..count.unwrap_or(1) {
                let name = match count {
                    Some(_) => format!("{}-{index}", p.name),
                    None => p.name.clone(),
                };
                let who = format!("partition {name:?}");
                if members.iter().any(|m| m.name == name) {
                    return Err(invalid(format!("{who}: the name is used twice")));
                }
                let mut local = vars.clone();
                local.insert("PARTITION".into(), name.clone());
                local.insert("I".into(), index.to_string());
                let xl = |v: &str| expand(v, &local).map_err(|e| invalid(format!("{who}: {e}")));
                let d = merge(&s.defaults, &p.settings);
                if p.command.is_empty() {
                    return Err(invalid(format!("{who}: command is empty")));
                }
                let restart = match d.restart.as_deref().unwrap_or("on-failure") {
                    "always" => Restart::Always,
                    "on-failure" => Restart::OnFailure,
                    "never" => Restart::Never,
                    r => {
                        return Err(invalid(format!(
                            "{who}: restart = {r:?}: write \"always\", \"on-failure\" or \"never\""
                        )));
                    }
                };
                let net_stream = xl(d.net_stream.as_deref().unwrap_or("on"))?;
                if net_stream != "on" && net_stream != "off" {
                    return Err(invalid(format!(
                        "{who}: net-stream = {net_stream:?}: write \"on\" or \"off\""
                    )));
                }
                let ready = match &p.ready {
                    None => Ready::Started,
                    Some(r) => parse_ready(&xl(r)?).map_err(|e| invalid(format!("{who}: {e}")))?,
                };
                if gateway == GatewayMode::Shared && !p.env.is_empty() {
                    return Err(invalid(format!(
                        "{who}: env needs gateway = \"per-partition\" (a shared gateway serves one environment to all)"
                    )));
                }
                let list = |v: &Option<Vec<String>>| -> Result<Vec<String>, SpecError> {
                    v.iter().flatten().map(|s| xl(s)).collect()
                };
                members.push(Member {
                    name,
                    group: p.name.clone(),
                    role: p.role.clone().unwrap_or_else(|| p.name.clone()),
                    command: p.command.iter().map(|c| xl(c)).collect::<Result<_, _>>()?,
                    env: p
                        .env
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), xl(v)?)))
                        .collect::<Result<_, SpecError>>()?,
                    ready,
                    after: after.clone(),
                    mem: xl(d.mem.as_deref().unwrap_or("1G"))?,
                    cache: d.cache.as_deref().map(xl).transpose()?,
                    net_stream,
                    net: list(&d.net)?,
                    mounts: list(&d.mounts)?,
                    restart,
                    astraea_args: list(&d.astraea_args)?,
                });
            }
        }
        if gateway == GatewayMode::Shared
            && let Some(m) = members
                .iter()
                .find(|m| m.mounts != members[0].mounts || m.net != members[0].net)
        {
            return Err(invalid(format!(
                "partition {:?}: with gateway = \"shared\" every partition has the same mounts and net (set them in [deployment])",
                m.name
            )));
        }
        Ok(Self {
            name: s.name.clone(),
            log_dir,
            jdk: s.jdk.as_deref().map(x).transpose()?.map(PathBuf::from),
            gateway,
            ready_timeout: Duration::from_secs(s.ready_timeout.unwrap_or(180)),
            stop_timeout: Duration::from_secs(s.stop_timeout.unwrap_or(20)),
            members,
        })
    }
}

/// A partition's settings over the deployment's.
fn merge(d: &RawDefaults, p: &RawDefaults) -> RawDefaults {
    RawDefaults {
        mem: p.mem.clone().or_else(|| d.mem.clone()),
        cache: p.cache.clone().or_else(|| d.cache.clone()),
        net_stream: p.net_stream.clone().or_else(|| d.net_stream.clone()),
        net: p.net.clone().or_else(|| d.net.clone()),
        mounts: p.mounts.clone().or_else(|| d.mounts.clone()),
        restart: p.restart.clone().or_else(|| d.restart.clone()),
        astraea_args: p.astraea_args.clone().or_else(|| d.astraea_args.clone()),
    }
}

/// `http://HOST:PORT/PATH`, `tcp:HOST:PORT` or `log:TEXT`.
pub fn parse_ready(r: &str) -> Result<Ready, String> {
    if let Some(rest) = r.strip_prefix("http://") {
        let (addr, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !addr.contains(':') {
            return Err(format!(
                "ready = {r:?}: the address needs a port (http://HOST:PORT/PATH)"
            ));
        }
        Ok(Ready::Http {
            addr: addr.to_string(),
            path: path.to_string(),
        })
    } else if let Some(addr) = r.strip_prefix("tcp:") {
        if !addr.contains(':') {
            return Err(format!("ready = {r:?}: write tcp:HOST:PORT"));
        }
        Ok(Ready::Tcp(addr.to_string()))
    } else if let Some(text) = r.strip_prefix("log:")
        && !text.is_empty()
    {
        Ok(Ready::Log(text.to_string()))
    } else {
        Err(format!(
            "ready = {r:?}: write http://HOST:PORT/PATH, tcp:HOST:PORT or log:TEXT"
        ))
    }
}

/// The value of `NAME`, or of `A+B-C…` (names or integers; the result an
/// integer: `${I+BASE_PORT}`).
fn value(expr: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let lookup = |name: &str| -> Result<String, String> {
        vars.get(name).cloned().or_else(|| std::env::var(name).ok()).ok_or_else(|| {
            format!(
                "${{{name}}} is not set (give --set {name}=VALUE, a [vars] entry or an environment variable)"
            )
        })
    };
    if !expr.contains(['+', '-']) || expr.starts_with(['+', '-']) {
        return lookup(expr);
    }
    let mut total: i64 = 0;
    let mut sign = 1;
    let mut term = String::new();
    for c in expr.chars().chain(std::iter::once('+')) {
        if c == '+' || c == '-' {
            let t = term.trim();
            let v = match t.parse::<i64>() {
                Ok(n) => n,
                Err(_) => {
                    let v = lookup(t)?;
                    v.trim()
                        .parse::<i64>()
                        .map_err(|_| format!("${{{expr}}}: {t} = {v:?} is not an integer"))?
                }
            };
            total += sign * v;
            sign = if c == '+' { 1 } else { -1 };
            term.clear();
        } else {
            term.push(c);
        }
    }
    Ok(total.to_string())
}

/// Replaces every `${NAME}` (or `${A+B-…}`) in `s`.
fn expand(s: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            return Err(format!("{s:?}: \"${{\" without its \"}}\""));
        };
        let name = &after[..j];
        out.push_str(&value(name, vars)?);
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        [deployment]
        name = "search"
        mem = "768M"
        gateway = "shared"
        [vars]
        IDX = "${DIR}/index"
        CP = "${IDX}/../classes"
        [[partition]]
        name = "shard-0"
        role = "shard"
        command = ["java", "-cp", "${CP}", "ShardServer", "--index", "${IDX}/${PARTITION}", "--port", "${PORT}"]
        ready = "http://127.0.0.1:${PORT}/ping"
        [[partition]]
        name = "frontend"
        mem = "512M"
        after = ["shard-0"]
        restart = "always"
        command = ["java", "FrontEnd"]
        ready = "log:listening"
    "#;

    #[test]
    fn a_good_file_expands_and_inherits() {
        let s = Spec::parse(
            Path::new("/srv/d/search.toml"),
            GOOD,
            &[("PORT".into(), "9100".into())],
        )
        .unwrap();
        assert_eq!(s.gateway, GatewayMode::Shared);
        assert_eq!(s.log_dir, Path::new("/srv/d/search.logs"));
        let m = &s.members[0];
        assert_eq!(m.command[2], "/srv/d/index/../classes");
        assert_eq!(m.command[5], "/srv/d/index/shard-0");
        assert_eq!(m.mem, "768M");
        assert_eq!(m.restart, Restart::OnFailure);
        assert_eq!(
            m.ready,
            Ready::Http {
                addr: "127.0.0.1:9100".into(),
                path: "/ping".into()
            }
        );
        let f = &s.members[1];
        assert_eq!((f.mem.as_str(), f.restart), ("512M", Restart::Always));
        assert_eq!(f.ready, Ready::Log("listening".into()));
        assert_eq!(f.role, "frontend");
    }

    #[test]
    fn counted_partitions_get_their_index_and_after_names_the_group() {
        let text = r#"
            [deployment]
            name = "s"
            [vars]
            BASE = "9100"
            [[partition]]
            name = "shard"
            count = "${SHARDS}"
            command = ["x", "--port", "${I+BASE}", "--dir", "${PARTITION}"]
            [[partition]]
            name = "fe"
            after = ["shard"]
            command = ["y", "127.0.0.1:${BASE}-${BASE+SHARDS-1}"]
        "#;
        let s = Spec::parse(Path::new("d.toml"), text, &[("SHARDS".into(), "3".into())]).unwrap();
        let names: Vec<_> = s.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["shard-0", "shard-1", "shard-2", "fe"]);
        assert_eq!(
            s.members[2].command,
            ["x", "--port", "9102", "--dir", "shard-2"]
        );
        assert_eq!(s.members[2].role, "shard");
        assert_eq!(s.members[3].after, ["shard-0", "shard-1", "shard-2"]);
        assert_eq!(s.members[3].command[1], "127.0.0.1:9100-9102");
        let bad = Spec::parse(Path::new("d.toml"), text, &[("SHARDS".into(), "0".into())]);
        assert!(bad.unwrap_err().to_string().contains("count = \"0\""));
    }

    #[test]
    fn mistakes_are_named() {
        let p = Path::new("d.toml");
        let err = |text: &str| Spec::parse(p, text, &[]).unwrap_err().to_string();
        assert!(err(GOOD).contains("${PORT} is not set"), "{}", err(GOOD));
        let typo = GOOD.replace("mem = \"512M\"", "memory = \"512M\"");
        assert!(
            err(&typo).contains("unknown field `memory`"),
            "{}",
            err(&typo)
        );
        let order = "[deployment]\nname='x'\n[[partition]]\nname='a'\ncommand=['x']\nafter=['b']\n";
        assert!(err(order).contains("not a partition listed before it"));
        let twice = "[deployment]\nname='x'\n[[partition]]\nname='a'\ncommand=['x']\n[[partition]]\nname='a'\ncommand=['y']\n";
        assert!(err(twice).contains("used twice"));
        let ready =
            "[deployment]\nname='x'\n[[partition]]\nname='a'\ncommand=['x']\nready='http://h/p'\n";
        assert!(err(ready).contains("needs a port"));
        let none = "[deployment]\nname='x'\n";
        assert!(err(none).contains("nothing to deploy"));
        let env = "[deployment]\nname='x'\ngateway='shared'\n[[partition]]\nname='a'\ncommand=['x']\nenv={A='1'}\n";
        assert!(err(env).contains("per-partition"));
    }
}
