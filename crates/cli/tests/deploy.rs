//! The Kubernetes manifests in deploy/kubernetes, checked offline: a typed parse of the
//! fields they use (unknown or misspelt fields are refused), the Indexed Job's invariants,
//! and every vload flag they pass checked against `vload attack --help`. The official API
//! types check them too: deploy/kubernetes/check (Go, k8s.io/api, strict decoding). They are
//! not applied to a cluster here. The GitHub Actions example in docs/ci passes actionlint, and
//! the Debian package of deploy/debian builds and runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Job {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: JobSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    name: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JobSpec {
    completion_mode: String,
    completions: u32,
    parallelism: u32,
    backoff_limit: u32,
    template: PodTemplate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PodTemplate {
    metadata: Metadata,
    spec: PodSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodSpec {
    restart_policy: String,
    #[serde(default)]
    topology_spread_constraints: Vec<serde_yaml_ng::Value>,
    containers: Vec<Container>,
    volumes: Vec<Volume>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Container {
    name: String,
    image: String,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<Env>,
    #[serde(default)]
    env_from: Vec<serde_yaml_ng::Value>,
    #[serde(default)]
    resources: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Env {
    name: String,
    value: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VolumeMount {
    name: String,
    mount_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Volume {
    name: String,
    persistent_volume_claim: Option<ClaimRef>,
    empty_dir: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClaimRef {
    claim_name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Claim {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: ClaimSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClaimSpec {
    access_modes: Vec<String>,
    resources: serde_yaml_ng::Value,
}

fn read(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/kubernetes")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // As `envsubst '$START_AT'` fills it in before `kubectl apply`: two minutes from now.
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(120);
    text.replace(
        "${START_AT}",
        &humantime::format_rfc3339_seconds(at).to_string(),
    )
}

/// A fixed START_AT in a manifest is in the past by the time anyone applies it: the
/// manifests hold a placeholder that the documented `envsubst` fills.
#[test]
fn start_at_is_filled_in_at_apply_time_not_fixed() {
    for file in ["job.yaml", "job-upload.yaml"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../deploy/kubernetes")
            .join(file);
        let raw = std::fs::read_to_string(path).unwrap();
        assert!(raw.contains("value: \"${START_AT}\""), "{file}");
        assert!(
            !raw.lines()
                .any(|l| l.contains("value:") && l.contains("T10:00:00Z")),
            "{file}: a fixed start time"
        );
    }
    let readme = read("README.md");
    assert!(
        readme.contains("envsubst '$START_AT'"),
        "README shows the substitution"
    );
}

/// `$(NAME)` references expanded the way the kubelet does, from the container's env and
/// the index the Job controller injects.
fn expand(arg: &str, env: &BTreeMap<&str, &str>) -> String {
    let mut out = arg.to_owned();
    for (name, value) in env {
        out = out.replace(&format!("$({name})"), value);
    }
    out
}

fn check_job(file: &str) -> Job {
    let job: Job = serde_yaml_ng::from_str(&read(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(
        (job.api_version.as_str(), job.kind.as_str()),
        ("batch/v1", "Job")
    );
    assert!(job.metadata.name.is_some());
    let spec = &job.spec;
    assert_eq!(
        spec.completion_mode, "Indexed",
        "{file}: JOB_COMPLETION_INDEX needs it"
    );
    assert_eq!(
        spec.completions, spec.parallelism,
        "{file}: every shard at once"
    );
    assert_eq!(
        spec.backoff_limit, 0,
        "{file}: a retried shard would start late"
    );
    assert_eq!(spec.template.spec.restart_policy, "Never");
    let labels = &spec.template.metadata.labels;
    assert!(!spec.template.spec.topology_spread_constraints.is_empty());
    assert!(labels.contains_key("app.kubernetes.io/name"));
    let vload = spec
        .template
        .spec
        .containers
        .iter()
        .find(|c| c.name == "vload")
        .expect("a vload container");
    assert!(vload.command.is_empty(), "the image's entrypoint is vload");
    let cpu = vload
        .resources
        .as_ref()
        .and_then(|r| r.get("requests")?.get("cpu"));
    assert!(
        cpu.is_some(),
        "{file}: a generator requests its CPUs, or it measures its neighbours"
    );
    assert!(!vload.image.is_empty());
    // The shard count in --shard is the Job's.
    let shard = vload
        .args
        .iter()
        .skip_while(|a| *a != "--shard")
        .nth(1)
        .expect("--shard");
    assert_eq!(
        shard,
        &format!("$(JOB_COMPLETION_INDEX)/{}", spec.completions),
        "{file}"
    );
    // Every $(VAR) is defined, and the output goes to a mounted volume.
    let mut env: BTreeMap<&str, &str> = vload
        .env
        .iter()
        .map(|e| (e.name.as_str(), e.value.as_str()))
        .collect();
    env.insert("JOB_COMPLETION_INDEX", "3");
    let args: Vec<String> = vload.args.iter().map(|a| expand(a, &env)).collect();
    assert!(
        args.iter().all(|a| !a.contains("$(")),
        "{file}: undefined variable in {args:?}"
    );
    let output = args.iter().skip_while(|a| *a != "-o").nth(1).expect("-o");
    assert_eq!(output, "/results/shard-3.json");
    let mounts: Vec<&str> = vload
        .volume_mounts
        .iter()
        .map(|m| m.mount_path.as_str())
        .collect();
    assert!(
        mounts.iter().any(|m| output.starts_with(m)),
        "{file}: {mounts:?}"
    );
    let volumes: Vec<&str> = spec
        .template
        .spec
        .volumes
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    for mount in &vload.volume_mounts {
        assert!(
            volumes.contains(&mount.name.as_str()),
            "{file}: {}",
            mount.name
        );
    }
    for volume in &spec.template.spec.volumes {
        assert!(volume.persistent_volume_claim.is_some() || volume.empty_dir.is_some());
    }
    // The values parse as vload reads them (RFC 3339 UTC, humantime durations).
    let value = |flag: &str| args.iter().skip_while(|a| *a != flag).nth(1).unwrap();
    humantime::parse_rfc3339_weak(value("--start-at")).expect("--start-at is RFC 3339");
    for flag in ["--duration", "--warmup"] {
        humantime::parse_duration(value(flag)).unwrap_or_else(|e| panic!("{flag}: {e}"));
    }
    assert!(
        args.last().unwrap().starts_with("http://"),
        "the URL comes last"
    );
    // Every flag is one vload attack knows.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_vload"))
        .args(["attack", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert_eq!(args[0], "attack");
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(flag.as_str()),
            "{file}: vload attack has no {flag}"
        );
    }
    job
}

#[test]
fn indexed_job_with_a_shared_volume() {
    let job = check_job("job.yaml");
    let claim = job.spec.template.spec.volumes[0]
        .persistent_volume_claim
        .as_ref()
        .expect("a claim");
    let pvc: Claim = serde_yaml_ng::from_str(&read("results-pvc.yaml")).unwrap();
    assert_eq!(
        (pvc.api_version.as_str(), pvc.kind.as_str()),
        ("v1", "PersistentVolumeClaim")
    );
    assert_eq!(
        pvc.metadata.name.as_deref(),
        Some(claim.claim_name.as_str())
    );
    assert_eq!(
        pvc.spec.access_modes,
        ["ReadWriteMany"],
        "shards on several nodes"
    );
    assert!(pvc.spec.resources.get("requests").is_some());
}

#[test]
fn indexed_job_with_an_upload_container() {
    let job = check_job("job-upload.yaml");
    let containers = &job.spec.template.spec.containers;
    let upload = containers
        .iter()
        .find(|c| c.name == "upload")
        .expect("an uploader");
    let script = upload.args.join("\n");
    assert!(
        script.contains("shard-$JOB_COMPLETION_INDEX.json"),
        "{script}"
    );
    assert!(upload.env.iter().any(|e| e.name == "RESULTS_URL"));
    assert!(!upload.env_from.is_empty(), "credentials from a secret");
    assert_eq!(upload.volume_mounts[0].mount_path, "/results");
}

#[test]
fn misspelt_fields_are_refused() {
    let text = read("job.yaml").replace("completionMode", "completionMod");
    assert!(serde_yaml_ng::from_str::<Job>(&text).is_err());
}

/// `COPY . .` in the Dockerfile must not send the build output along.
#[test]
fn the_docker_build_context_leaves_target_out() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.dockerignore");
    let ignore = std::fs::read_to_string(path).expect(".dockerignore at the root");
    assert!(ignore.lines().any(|l| l.trim() == "target/"), "{ignore}");
}

/// The manifests decode strictly into the official Kubernetes API types (k8s.io/api, in the
/// Go program deploy/kubernetes/check), and a misspelt field makes that check fail.
#[test]
fn the_manifests_decode_strictly_into_the_kubernetes_api_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let check = root.join("deploy/kubernetes/check");
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none() && std::env::var_os("VLOAD_REQUIRE_GO").is_none(),
            "go is not installed, and CI needs it for the Kubernetes API check (.ci/run installs it)"
        );
        #[allow(clippy::print_stderr, reason = "a skipped test says so")]
        {
            eprintln!(
                "SKIPPED the_manifests_decode_strictly_into_the_kubernetes_api_types: go is not installed"
            );
        }
        return;
    }
    let go = |files: &[std::path::PathBuf]| {
        std::process::Command::new("go")
            .args(["run", "."])
            .args(files)
            .current_dir(&check)
            .output()
            .expect("go runs")
    };
    let manifests: Vec<_> = ["job.yaml", "job-upload.yaml", "results-pvc.yaml"]
        .iter()
        .map(|f| root.join("deploy/kubernetes").join(f))
        .collect();
    let o = go(&manifests);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 manifests decode strictly"));

    // The same Job with one field misspelt: refused, naming the field.
    let dir = std::env::temp_dir().join(format!("vload-k8s-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("job.yaml");
    let job = read("job.yaml");
    assert!(job.contains("parallelism:"));
    std::fs::write(&bad, job.replacen("parallelism:", "paralelism:", 1)).unwrap();
    let o = go(std::slice::from_ref(&bad));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!o.status.success(), "a misspelt field must fail the check");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("unknown field \"paralelism\""),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// See #35: the GitHub Actions example in docs/ci passes actionlint (run from the Go module
/// proxy at a fixed version; it also runs shellcheck on the scripts when that is installed),
/// and a broken copy of it does not, so the check can fail.
#[test]
fn the_github_actions_example_passes_actionlint() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none() && std::env::var_os("VLOAD_REQUIRE_GO").is_none(),
            "go is not installed, and CI needs it for actionlint (.ci/run installs it)"
        );
        #[allow(clippy::print_stderr, reason = "a skipped test says so")]
        {
            eprintln!("SKIPPED the_github_actions_example_passes_actionlint: go is not installed");
        }
        return;
    }
    let lint = |file: &Path| {
        std::process::Command::new("go")
            .args(["run", "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"])
            .arg(file)
            // `go run pkg@version` ignores the current module; any directory will do.
            .current_dir(&root)
            .output()
            .expect("go runs")
    };
    let workflow = root.join("docs/ci/github-actions.yml");
    let o = lint(&workflow);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&workflow).unwrap();
    let broken = std::env::temp_dir().join(format!("vload-workflow-{}.yml", std::process::id()));
    std::fs::write(&broken, text.replace("runs-on:", "runs-onn:")).unwrap();
    let o = lint(&broken);
    let _ = std::fs::remove_file(&broken);
    assert!(!o.status.success(), "a misspelt key fails the lint");
    assert!(String::from_utf8_lossy(&o.stdout).contains("runs-onn"));
}

/// See #35: deploy/debian/build.sh makes a .deb (Debian's users install with apt) whose
/// control fields name this version, whose files are where Debian looks for them, and whose
/// binary, unpacked, runs an attack on its built-in origin. `.ci/run` also installs it with
/// `dpkg -i`.
#[test]
fn the_debian_package_builds_unpacks_and_attacks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if std::process::Command::new("dpkg-deb")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "dpkg-deb is not installed, and CI builds the Debian package"
        );
        #[allow(clippy::print_stderr, reason = "a skipped test says so")]
        {
            eprintln!("SKIPPED the_debian_package_builds_unpacks_and_attacks: no dpkg-deb");
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("vload-deb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = std::process::Command::new("bash")
        .arg(root.join("deploy/debian/build.sh"))
        .arg(env!("CARGO_BIN_EXE_vload"))
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let deb = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        deb.ends_with(".deb") && deb.contains(&format!("vload_{version}_")),
        "{deb}"
    );
    let field = |name: &str| {
        let o = std::process::Command::new("dpkg-deb")
            .args(["--field", &deb, name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    assert_eq!(field("Package"), "vload");
    assert_eq!(field("Version"), version);
    let unpacked = dir.join("root");
    let o = std::process::Command::new("dpkg-deb")
        .args(["-x", &deb])
        .arg(&unpacked)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for file in [
        "usr/bin/vload",
        "usr/share/man/man1/vload.1.gz",
        "usr/share/bash-completion/completions/vload",
        "usr/share/zsh/vendor-completions/_vload",
        "usr/share/fish/vendor_completions.d/vload.fish",
        "usr/share/doc/vload/copyright",
    ] {
        assert!(unpacked.join(file).is_file(), "{file} in the package");
    }
    let o = std::process::Command::new(unpacked.join("usr/bin/vload"))
        .args(["attack", "-n", "300", "-c", "2", "--no-progress"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("300, 300, 300, 0, 0"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
