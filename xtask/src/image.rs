//! `cargo xtask image`: the fake GPU host image `faultkit/gpu-host:dev`, built here with no
//! registry — `FROM scratch`, Debian's `busybox-static` for a shell and its tools, and statically
//! linked `fake-vllm`, `fake-nvidia-smi` and `faultkit` — with the model presets under `/models`
//! and the scenario files under `/scenarios`.
//!
//! The image carries a label with the hash of everything copied into it; it is rebuilt only when
//! that changes, and the image it replaces is removed (no dangling layers are left behind).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The image every container test and the `container` runner use.
pub const IMAGE: &str = "faultkit/gpu-host:dev";
const HASH_LABEL: &str = "faultkit.hash";
const STATIC_TARGET: &str = "x86_64-unknown-linux-gnu";

fn root() -> PathBuf {
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    r.canonicalize().unwrap_or(r)
}

fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Options of `cargo xtask image`.
#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// Rebuild even if the image is up to date.
    #[arg(long)]
    force: bool,
}

pub fn run(a: ImageArgs) -> Result<i32> {
    let id = ensure(a.force)?;
    println!("{IMAGE} ({id})");
    Ok(0)
}

/// Builds the image if it is missing or out of date; returns its id.
pub fn ensure(force: bool) -> Result<String> {
    docker_answers()?;
    let busybox = static_busybox()?;
    eprintln!("==> image: static binaries");
    let bins = build_static()?;
    let ctx = target().join("faultkit-image/context");
    let _ = std::fs::remove_dir_all(&ctx);
    std::fs::create_dir_all(ctx.join("bin"))?;
    std::fs::create_dir_all(ctx.join("usr/local/bin"))?;
    std::fs::copy(&busybox, ctx.join("bin/busybox"))?;
    for b in &bins {
        std::fs::copy(
            b,
            ctx.join("usr/local/bin")
                .join(b.file_name().expect("a file")),
        )?;
    }
    for m in generator::catalog::models() {
        fake_vllm::write_model_dir(m, &ctx.join("models").join(&m.repo))?;
    }
    copy_scenarios(&root().join("scenarios"), &ctx.join("scenarios"))?;
    let hash = hash_dir(&ctx)?;
    std::fs::write(ctx.join("Dockerfile"), dockerfile(&hash))?;

    let current = inspect(
        IMAGE,
        &format!("{{{{ index .Config.Labels \"{HASH_LABEL}\" }}}}|{{{{.Id}}}}"),
    );
    let (old_hash, old_id) = current
        .as_deref()
        .and_then(|s| s.split_once('|'))
        .map_or((String::new(), String::new()), |(h, i)| {
            (h.to_string(), i.to_string())
        });
    if !force && old_hash == hash {
        eprintln!("==> image: {IMAGE} is up to date");
        return Ok(old_id);
    }
    eprintln!("==> image: docker build {IMAGE}");
    let st = Command::new("docker")
        .args(["build", "--quiet", "--force-rm", "--tag", IMAGE, "."])
        .env("DOCKER_BUILDKIT", "0")
        .current_dir(&ctx)
        .stdout(Stdio::null())
        .status()
        .context("running docker build")?;
    if !st.success() {
        bail!("docker build of {IMAGE} failed");
    }
    let new_id = inspect(IMAGE, "{{.Id}}").unwrap_or_default();
    if !old_id.is_empty() && old_id != new_id {
        // The replaced image would be left dangling.
        let _ = Command::new("docker")
            .args(["image", "rm", &old_id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    Ok(new_id)
}

fn docker_answers() -> Result<()> {
    let ok = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!("no Docker engine answers (`docker version` fails): the container scenarios and tests need one");
    }
    Ok(())
}

fn inspect(image: &str, format: &str) -> Option<String> {
    let out = Command::new("docker")
        .args(["image", "inspect", "--format", format, image])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A statically linked busybox: Debian's `busybox-static`, installed with apt-get if missing.
fn static_busybox() -> Result<PathBuf> {
    let find = || {
        ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| is_static_elf(p))
    };
    if let Some(p) = find() {
        return Ok(p);
    }
    eprintln!("==> image: installing busybox-static (apt-get)");
    let st = Command::new("apt-get")
        .args(["install", "-y", "-q", "busybox-static"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    if !st.is_ok_and(|s| s.success()) {
        let _ = Command::new("apt-get").args(["update", "-q"]).status();
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "busybox-static"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    find().context("no statically linked busybox (install Debian's busybox-static)")
}

/// An ELF executable without a program interpreter (`PT_INTERP`) is statically linked.
fn is_static_elf(p: &Path) -> bool {
    let Ok(b) = std::fs::read(p) else {
        return false;
    };
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 {
        return false;
    }
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().expect("2 bytes"));
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36) as usize, u16_at(0x38));
    (0..phnum as usize).all(|i| {
        let o = phoff + i * phentsize;
        o + 4 <= b.len() && u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes")) != 3
    })
}

fn build_static() -> Result<Vec<PathBuf>> {
    let dir = target().join("static");
    let st = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root())
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            STATIC_TARGET,
            "--package",
            "fake-vllm",
            "--package",
            "faultkit",
            "--bins",
            "--target-dir",
        ])
        .arg(&dir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols")
        .status()
        .context("building static binaries")?;
    if !st.success() {
        bail!("static build failed");
    }
    let out = dir.join(STATIC_TARGET).join("release");
    let bins: Vec<PathBuf> = ["fake-vllm", "fake-nvidia-smi", "faultkit"]
        .iter()
        .map(|b| out.join(b))
        .collect();
    for b in &bins {
        if !is_static_elf(b) {
            bail!("{} is not statically linked", b.display());
        }
    }
    Ok(bins)
}

/// Scenario files (not the real logs: the container runner reads scenarios only).
fn copy_scenarios(from: &Path, to: &Path) -> Result<()> {
    for e in std::fs::read_dir(from)?.flatten() {
        let p = e.path();
        let name = e.file_name();
        if p.is_dir() && name != "real" {
            copy_scenarios(&p, &to.join(&name))?;
        } else if p.extension().is_some_and(|x| x == "toml") {
            std::fs::create_dir_all(to)?;
            std::fs::copy(&p, to.join(&name))?;
        }
    }
    Ok(())
}

/// FNV-1a over the paths and bytes of every file under `dir`, in sorted order.
fn hash_dir(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    };
    for f in files {
        feed(
            f.strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .as_bytes(),
        );
        feed(&std::fs::read(&f)?);
    }
    feed(dockerfile("").as_bytes());
    Ok(format!("{h:016x}"))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

fn dockerfile(hash: &str) -> String {
    format!(
        r#"FROM scratch
COPY bin/busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
COPY usr/ /usr/
COPY models/ /models/
COPY scenarios/ /scenarios/
RUN mkdir -p /tmp /var/lib/faultkit /var/log /root && chmod 1777 /tmp \
 && ln -s fake-vllm /usr/local/bin/vllm \
 && ln -s fake-vllm /usr/local/bin/python3 \
 && ln -s fake-vllm /usr/local/bin/nvidia-smi
ENV PATH=/usr/local/bin:/bin HOME=/root FAULTKIT_MODELS=/models FAULTKIT_GPU_STATE=/var/lib/faultkit/gpus.json FAULTKIT_SCENARIOS=/scenarios
LABEL {HASH_LABEL}="{hash}"
ENTRYPOINT ["/usr/local/bin/fake-vllm", "init"]
"#
    )
}
