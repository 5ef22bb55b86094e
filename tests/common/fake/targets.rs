//! One target test's world: a fake provider (which also serves the demo agent), a directory,
//! a config pointing at both, and the demo agent as an http target.

use std::path::{Path, PathBuf};

use super::{FakeServer, LiveConfig, KEY_ENV};
use crate::common::{evalfleet_with_env, tempdir, Output};

/// One test's stand-in provider (which also serves the demo agent), its directory, and a
/// config pointing at both.
pub struct Case {
    pub fake: FakeServer,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Case {
    pub fn new() -> Case {
        Case::with(FakeServer::plain())
    }

    pub fn with(fake: FakeServer) -> Case {
        let dir = tempdir();
        let config = fake.config(dir.path(), &LiveConfig::default());
        Case { fake, dir, config }
    }

    /// A file written in the test's directory.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A path in the test's directory (a report directory, say).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `evalfleet ARGS... --config CONFIG`, with the provider's key and `env` set.
    pub fn evalfleet(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let config = arg(&self.config).to_owned();
        let mut args = args.to_vec();
        args.extend(["--config", &config]);
        let mut env = env.to_vec();
        env.push((KEY_ENV, &self.fake.key));
        evalfleet_with_env(&args, &env)
    }

    /// `evalfleet run DATA --suite SUITE --target TARGET --out OUT EXTRA...`.
    pub fn run(
        &self,
        data: &Path,
        suite: &str,
        target: &Path,
        out: &Path,
        extra: &[&str],
    ) -> Output {
        let mut args = vec![
            "run",
            arg(data),
            "--suite",
            suite,
            "--target",
            arg(target),
            "--out",
            arg(out),
        ];
        args.extend_from_slice(extra);
        self.evalfleet(&args, &[])
    }

    /// An http target at the fake's demo agent, with `extra` YAML lines.
    pub fn agent(&self, name: &str, extra: &str) -> PathBuf {
        self.file(name, &agent_target(&self.fake, extra))
    }
}

pub fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// An http target at the fake's demo agent.
pub fn agent_target(fake: &FakeServer, extra: &str) -> String {
    format!(
        "name: demo\nkind: http\nurl: \"http://{}/agent\"\n\
         body: {{question: \"{{{{ question }}}}\", conversation: {{id: \"{{{{ id }}}}\"}}}}\n\
         outputs: {{trace: /data/trace}}\ntimeout_s: 5\n\
         retry: {{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 50}}\n{extra}",
        fake.addr
    )
}
