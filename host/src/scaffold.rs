//! `tephra plugin new`: a buildable plugin project with a test, in Rust,
//! Python or JavaScript. The Python and JavaScript projects start from the
//! example policies (`examples/plugins/`), renamed, with their own copy of the
//! contract so they build anywhere.

use anyhow::{anyhow, bail, Result};
use std::path::Path;

const WIT: &str = include_str!("../../wit/scheduler.wit");
const RUST_CARGO: &str = include_str!("../templates/rust/Cargo.toml.in");
const RUST_LIB: &str = include_str!("../templates/rust/lib.rs.in");
const TEST_SH: &str = include_str!("../templates/test.sh.in");
const PY_APP: &str = include_str!("../../examples/plugins/python/app.py");
const PY_BUILD: &str = include_str!("../../examples/plugins/python/build.sh");
const PY_CLUSTER: &str = include_str!("../../examples/plugins/python/cluster.yaml");
const JS_APP: &str = include_str!("../../examples/plugins/js/spread-label.js");
const JS_BUILD: &str = include_str!("../../examples/plugins/js/build.sh");
const JS_PACKAGE: &str = include_str!("../../examples/plugins/js/package.json");
const JS_LOCK: &str = include_str!("../../examples/plugins/js/package-lock.json");
const JS_CLUSTER: &str = include_str!("../../examples/plugins/js/cluster.yaml");

/// The build scripts find the contract next to them in a scaffolded project.
fn local_wit(script: &str) -> String {
    let lines: Vec<&str> =
        script.lines().map(|l| if l.starts_with("WIT_DIR=") { "WIT_DIR=$HERE/wit" } else { l }).collect();
    lines.join("\n") + "\n"
}

fn write(dir: &Path, rel: &str, text: &str, executable: bool) -> Result<()> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| anyhow!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Creates `dir` with a plugin project named `name` in `lang`.
pub fn new_plugin(name: &str, lang: &str, dir: &Path) -> Result<Vec<String>> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        bail!("plugin name {name:?}: use lowercase letters, digits and '-'");
    }
    if dir.exists() && std::fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{}: already exists and is not empty", dir.display());
    }
    let test = |expect: &str| TEST_SH.replace("{{name}}", name).replace("{{expect}}", expect);
    let files: Vec<(String, String, bool)> = match lang {
        "rust" => {
            let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk");
            let sdk = sdk.canonicalize().unwrap_or(sdk);
            vec![
                (
                    "Cargo.toml".into(),
                    RUST_CARGO.replace("{{name}}", name).replace("{{sdk}}", &sdk.display().to_string()),
                    false,
                ),
                ("src/lib.rs".into(), RUST_LIB.replace("{{name}}", name), false),
            ]
        }
        "python" => vec![
            ("app.py".into(), PY_APP.replace("NAME = \"fair-team\"", &format!("NAME = \"{name}\"")), false),
            ("build.sh".into(), local_wit(&PY_BUILD.replace("NAME=fair-team", &format!("NAME={name}"))), true),
            ("cluster.yaml".into(), PY_CLUSTER.replace("fair-team", name), false),
            (
                "test.sh".into(),
                test("team-b/train-b-t-0 → solo\nteam-c/train-c-t-0 → solo\nteam-a/train-a-t-0 → solo"),
                true,
            ),
            ("wit/scheduler.wit".into(), WIT.to_string(), false),
            (".gitignore".into(), ".venv/\nbindings/\n__pycache__/\nout/\n".into(), false),
        ],
        "js" => vec![
            (
                format!("{name}.js"),
                JS_APP.replace("const NAME = 'spread-label';", &format!("const NAME = '{name}';")),
                false,
            ),
            ("build.sh".into(), local_wit(&JS_BUILD.replace("NAME=spread-label", &format!("NAME={name}"))), true),
            (
                "package.json".into(),
                JS_PACKAGE.replace("tephra-plugin-spread-label", &format!("tephra-plugin-{name}")),
                false,
            ),
            (
                "package-lock.json".into(),
                JS_LOCK.replace("tephra-plugin-spread-label", &format!("tephra-plugin-{name}")),
                false,
            ),
            ("cluster.yaml".into(), JS_CLUSTER.replace("spread-label", name), false),
            (
                "test.sh".into(),
                test("apps/web-t-0 → east-1\napps/web-t-1 → east-2\napps/web-t-2 → east-2\napps/web-t-3 → east-1"),
                true,
            ),
            ("wit/scheduler.wit".into(), WIT.to_string(), false),
            (".gitignore".into(), "node_modules/\nout/\n".into(), false),
        ],
        other => bail!("--lang {other:?}: use rust, python or js"),
    };
    let mut written = Vec::new();
    for (rel, text, exe) in files {
        write(dir, &rel, &text, exe)?;
        written.push(rel);
    }
    Ok(written)
}
