//! `pull` (docs/reference/tart-cli.md §2.1) and `clone` (§2.2): the manifest check, the per-host
//! flock with `waiting for lock...`, simulated progress lines (`CI` plain vs ANSI rewrite), the
//! resumable `tmp/<md5(name)>` download (SIGINT deletes it and prints `Error: cancelled`, SIGKILL
//! leaves it), the cache layout with tag symlink, and the `$TART_HOME`-locked copy of a clone.

use std::cell::Cell;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

use crate::Ctx;
use crate::autoprune;
use crate::bandwidth;
use crate::cli::Parsed;
use crate::error::Failure;
use crate::home::{self, GB, VmConfig};
use crate::knobs::{Action, DEFAULT_PULL_MB_PER_S};
use crate::locks;
use crate::registry::{Reference, Remote, check_manifest, is_remote};

const NO_SPACE: &str = "The operation couldn’t be completed. No space left on device";

pub(crate) async fn pull(ctx: &Ctx, p: &Parsed, action: Option<Action>) -> Result<(), Failure> {
    let name = &p.positionals[0];
    if p.num::<i64>("pull", "concurrency")?.is_some_and(|c| c < 1) {
        return Err(Failure::usage(
            "pull",
            "network concurrency cannot be less than 1",
        ));
    }
    if !is_remote(name) && ctx.home.vm_exists(name) {
        println!("\"{name}\" is a local image, nothing to pull here!");
        return Ok(());
    }
    let remote = Remote::parse(name)?;
    println!("pulling {}...", remote.canonical());
    fetch(ctx, &remote, name, action.as_ref()).await
}

/// Resolves `remote` to its digest directory in the cache, if cached (no registry contact).
fn cached_dir(ctx: &Ctx, remote: &Remote) -> Option<PathBuf> {
    let repo = remote.repo_dir(&ctx.home);
    let path = match &remote.reference {
        Reference::Tag(t) => repo.join(t),
        Reference::Digest(d) => repo.join(format!("sha256:{d}")),
    };
    fs::canonicalize(path)
        .ok()
        .filter(|p| p.join("config.json").is_file())
}

/// Everything `pull` does after its first line; `clone` of an uncached image runs it too.
async fn fetch(
    ctx: &Ctx,
    remote: &Remote,
    given: &str,
    action: Option<&Action>,
) -> Result<(), Failure> {
    let mut sigint = signal(SignalKind::interrupt())?;
    let tmp = ctx.home.tmp().join(home::md5_hex(&remote.canonical()));
    let owns_tmp = Cell::new(false);
    tokio::select! {
        res = download(ctx, remote, given, action, &tmp, &owns_tmp) => res,
        _ = sigint.recv() => {
            // SIGINT cancels: the resumable tmp directory is removed
            // (docs/reference/tart-cli.md §2.1).
            if owns_tmp.get() {
                let _ = fs::remove_dir_all(&tmp);
            }
            Err(Failure::other("cancelled"))
        }
    }
}

async fn download(
    ctx: &Ctx,
    remote: &Remote,
    given: &str,
    action: Option<&Action>,
    tmp: &Path,
    owns_tmp: &Cell<bool>,
) -> Result<(), Failure> {
    println!("pulling manifest...");
    let img = remote.knob(&ctx.knobs, given);
    check_manifest(remote, &img)?;
    let hex = remote.digest(&img);
    let host_dir = remote.host_dir(&ctx.home);
    fs::create_dir_all(&host_dir)?;
    // Per-host lock for the whole download: try first, else say so and block
    // (docs/reference/tart-cli.md §1.4).
    let _host = match locks::try_flock(&host_dir)? {
        Some(g) => g,
        None => {
            println!("waiting for lock...");
            locks::flock(&host_dir).await?
        }
    };
    let repo = remote.repo_dir(&ctx.home);
    let digest_dir = repo.join(format!("sha256:{hex}"));
    let digest_name = remote.digest_name(&hex);
    if digest_dir.join("config.json").is_file() {
        if let Reference::Tag(tag) = &remote.reference {
            let link = repo.join(tag);
            if fs::read_link(&link).ok().as_deref() == Some(Path::new(&format!("sha256:{hex}"))) {
                println!("{digest_name} image is already cached and linked!");
            } else {
                println!("{digest_name} image is already cached! creating a symlink...");
                relink(&link, &hex)?;
            }
        } else {
            println!("{digest_name} image is already cached and linked!");
        }
        home::touch_accessed(&digest_dir)?;
        return Ok(());
    }
    autoprune::reclaim_if_needed(
        ctx,
        autoprune::pull_required(img.disk_gb.unwrap_or(50)),
        None,
    )?;
    let _tmp_lock = locks::create_locked_dir(tmp).await?;
    owns_tmp.set(true);
    if matches!(action, Some(Action::NoSpace(true))) {
        let _ = fs::remove_dir_all(tmp);
        return Err(Failure::other(NO_SPACE));
    }
    let compressed_gb = img.compressed_gb.unwrap_or(25.0);
    println!("pulling disk ({compressed_gb:.1} GB compressed)...");
    let stop = match action {
        Some(Action::StallAtPercent(p)) => Some(Stop::Stall(*p)),
        Some(Action::TimeoutAtPercent(p)) => Some(Stop::TimedOut(*p)),
        _ => None,
    };
    progress(ctx, tmp, compressed_gb, stop).await?;
    println!("pulling NVRAM...");
    let os = img.os.clone().unwrap_or_else(|| "darwin".into());
    let mac = home::stable_mac(&digest_name);
    VmConfig::new(
        &os,
        img.cpu.unwrap_or(4),
        img.memory_mb.unwrap_or(8192),
        mac,
    )
    .write(&tmp.join("config.json"))?;
    let disk = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(tmp.join("disk.img"))?;
    disk.set_len(img.disk_gb.unwrap_or(50) * GB)?;
    home::create_sparse(&tmp.join("nvram.bin"), 128 * 1024)?;
    let manifest =
        serde_json::json!({"name": remote.canonical(), "digest": format!("sha256:{hex}")});
    fs::write(tmp.join("manifest.json"), home::apple_pretty(&manifest)?)?;
    let _ = fs::remove_file(tmp.join(".fake-progress"));
    if matches!(remote.reference, Reference::Digest(_)) {
        fs::write(tmp.join(".explicitly-pulled"), b"")?;
    }
    fs::create_dir_all(&repo)?;
    fs::rename(tmp, &digest_dir)?;
    owns_tmp.set(false);
    if let Reference::Tag(tag) = &remote.reference {
        relink(&repo.join(tag), &hex)?;
        crate::maint::gc_oci(&ctx.home)?;
    }
    Ok(())
}

/// Points tag symlink `link` at `sha256:<hex>` (relative), replacing it atomically.
fn relink(link: &Path, hex: &str) -> std::io::Result<()> {
    let tmp_link = link.with_file_name(format!(".{}.{}", crate::uuid(), std::process::id()));
    std::os::unix::fs::symlink(format!("sha256:{hex}"), &tmp_link)?;
    fs::rename(&tmp_link, link)
}

/// How a simulated download ends early.
#[derive(Clone, Copy)]
enum Stop {
    /// No output forever from this percentage on.
    Stall(u32),
    /// The connection times out at this percentage.
    TimedOut(u32),
}

/// Simulated download: one step per simulated second, a line whenever the integer percentage
/// changes (at most once per simulated second, docs/reference/tart-cli.md §2.1); resumes from a
/// killed pull's `.fake-progress`; grows `disk.img` by 4 KiB per percent so a size watchdog sees
/// progress. With a `registry_dir`, each step's rate is the pull's share of the registry bandwidth.
async fn progress(
    ctx: &Ctx,
    tmp: &Path,
    compressed_gb: f64,
    stop: Option<Stop>,
) -> Result<(), Failure> {
    let per_mac = ctx
        .knobs
        .pull_mb_per_s
        .unwrap_or(DEFAULT_PULL_MB_PER_S)
        .max(0.001);
    let total_mb = (compressed_gb * 1000.0).max(0.0);
    let tick = Duration::from_secs_f64(ctx.knobs.scale());
    let progress_file = tmp.join(".fake-progress");
    let resume: u32 = fs::read_to_string(&progress_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let disk = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(tmp.join("disk.img"))?;
    // Held while downloading: a stalled or failed pull stops taking a share of the registry.
    let mut shared = match &ctx.knobs.registry_dir {
        Some(dir) => Some(bandwidth::register(dir)?),
        None => None,
    };
    let mut done_mb = f64::from(resume) / 100.0 * total_mb;
    let mut last: Option<u32> = None;
    let mut first = true;
    loop {
        let pct = if total_mb <= 0.0 {
            100
        } else {
            ((100.0 * done_mb / total_mb) as u32).min(100)
        };
        if last != Some(pct) {
            if ctx.ci || first {
                println!("{pct}%");
            } else {
                // Without CI the previous line is rewritten with ANSI escapes
                // (docs/reference/tart-cli.md §2.1).
                println!("\x1b[1A\r\x1b[J{pct}%");
            }
            first = false;
            last = Some(pct);
            disk.write_all_at(&[0xAB; 4096], u64::from(pct) * 4096)?;
            fs::write(&progress_file, pct.to_string())?;
            match stop {
                Some(Stop::Stall(s)) if pct >= s => {
                    shared.take();
                    std::future::pending::<()>().await
                }
                Some(Stop::TimedOut(s)) if pct >= s => {
                    // Only URLErrors are retried, 5 attempts per layer
                    // (docs/reference/tart-cli.md §2.1); the partial download stays in tmp for a
                    // later resume.
                    for _ in 0..5 {
                        println!(
                            "Error pulling disk layer 0: \"The request timed out.\", attempting to re-try..."
                        );
                    }
                    return Err(Failure::other("The request timed out."));
                }
                _ => {}
            }
        }
        if pct >= 100 {
            return Ok(());
        }
        // One simulated second at this second's rate: the registry's share is recounted at
        // every step, so a wave of pulls slows each of them as it starts and ends.
        let active = match (&shared, &ctx.knobs.registry_dir) {
            (Some(_), Some(dir)) => bandwidth::active_pulls(dir),
            _ => 0,
        };
        done_mb += bandwidth::rate_mb_per_s(per_mac, ctx.knobs.registry_mb_per_s, active);
        if !tick.is_zero() {
            tokio::time::sleep(tick).await;
        }
    }
}

pub(crate) async fn clone(ctx: &Ctx, p: &Parsed, action: Option<Action>) -> Result<(), Failure> {
    let (src, dst) = (&p.positionals[0], &p.positionals[1]);
    if is_remote(dst) {
        return Err(Failure::usage(
            "clone",
            format!("{dst} should be a local name"),
        ));
    }
    let prune_limit = p
        .num("clone", "prune-limit")?
        .unwrap_or(autoprune::DEFAULT_PRUNE_LIMIT_GIB);
    if p.flag("stacked") {
        if !is_remote(src) {
            return Err(Failure::usage("clone", "--stacked requires a remote image"));
        }
        return Err(Failure::other("unavailable"));
    }
    let source_dir = if is_remote(src) {
        let remote = Remote::parse(src)?;
        match cached_dir(ctx, &remote) {
            // Cached: the registry is not contacted (docs/reference/tart-cli.md §2.2).
            Some(d) => d,
            None => {
                fetch(ctx, &remote, src, action.as_ref()).await?;
                cached_dir(ctx, &remote)
                    .ok_or_else(|| Failure::other("image vanished after pull"))?
            }
        }
    } else if ctx.home.vm_exists(src) {
        ctx.home.vm_dir(src)
    } else {
        return Err(Failure::not_found(src));
    };
    if matches!(action, Some(Action::NoSpace(true))) {
        return Err(Failure::other(NO_SPACE));
    }
    let mut sigint = signal(SignalKind::interrupt())?;
    let work = ctx.home.tmp().join(crate::uuid());
    tokio::select! {
        res = copy_in(ctx, &source_dir, src, dst, &work) => res,
        _ = sigint.recv() => {
            let _ = fs::remove_dir_all(&work);
            Err(Failure::other("cancelled"))
        }
    }?;
    reserve_after_clone(ctx, prune_limit, &source_dir)
}

async fn copy_in(
    ctx: &Ctx,
    source_dir: &Path,
    src: &str,
    dst: &str,
    work: &Path,
) -> Result<(), Failure> {
    // The global $TART_HOME flock covers the copy and the move (docs/reference/tart-cli.md §1.4).
    let _home_lock = locks::flock(&ctx.home.root).await?;
    let _work_lock = locks::create_locked_dir(work).await?;
    let suspended = source_dir.join("state.vzvmsave").exists();
    for file in ["config.json", "disk.img", "nvram.bin", "state.vzvmsave"] {
        let from = source_dir.join(file);
        if from.exists() {
            home::sparse_copy(&from, &work.join(file))?;
        }
    }
    let delay = ctx
        .knobs
        .scaled_ms(ctx.knobs.clone_ms.unwrap_or(crate::knobs::DEFAULT_CLONE_MS));
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    // A new MAC only if another local VM already uses the source's
    // (docs/reference/tart-cli.md §2.2).
    let cfg_path = work.join("config.json");
    let mut cfg = VmConfig::read(&cfg_path)?;
    let collides = ctx
        .home
        .local_vms()
        .iter()
        .filter(|n| *n != src && *n != dst)
        .any(|n| {
            VmConfig::read(&ctx.home.config_path(n))
                .is_ok_and(|c| c.mac_address.eq_ignore_ascii_case(&cfg.mac_address))
        });
    if collides && !suspended {
        cfg.mac_address = home::random_mac();
        cfg.write(&cfg_path)?;
    }
    fs::create_dir_all(ctx.home.vms())?;
    let target = ctx.home.vm_dir(dst);
    // An existing VM of that name is silently replaced (docs/reference/tart-cli.md §2.2).
    if target.exists() {
        let old = ctx.home.tmp().join(format!("{}-old", crate::uuid()));
        fs::rename(&target, &old)?;
        fs::rename(work, &target)?;
        fs::remove_dir_all(&old)?;
    } else {
        fs::rename(work, &target)?;
    }
    let _ = home::touch_accessed(source_dir);
    Ok(())
}

/// After the copy, auto-prune makes room for the source's still-unallocated part
/// (docs/reference/tart-cli.md §4); the source is the initiator and is never deleted.
fn reserve_after_clone(ctx: &Ctx, limit_gib: u64, source_dir: &Path) -> Result<(), Failure> {
    let (logical, allocated) = home::dir_sizes(source_dir);
    let required = autoprune::clone_required(logical, allocated, limit_gib);
    if required > 0 {
        autoprune::reclaim_if_needed(ctx, required, Some(source_dir))?;
    }
    Ok(())
}
