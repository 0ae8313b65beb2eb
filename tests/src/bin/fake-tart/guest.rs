//! What the fake guest answers: `ip` (docs/reference/tart-cli.md §2.11: a stable IP from the MAC
//! once the boot delay after `run` has passed, when the resolver can see the guest on the network
//! its `run` asked for (`net.rs`) — the loopback one under `loopback_ips` —, the `no IP address
//! found` variants, `--wait`) and `exec` (docs/reference/tart-cli.md §2.10: the guest
//! agent's availability and speed, then a real process (`guest_exec`) or a few builtins with their
//! exit codes).

use std::io::{Read, Write};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::time::{Instant, sleep};

use crate::Ctx;
use crate::cli::Parsed;
use crate::error::Failure;
use crate::home::{self, VmConfig};
use crate::info::vm_state;
use crate::locks;
use crate::net::{self, Found, Resolver};
use crate::vm::{booted, running_net};

pub(crate) async fn ip(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    let wait: u16 = p.num("ip", "wait")?.unwrap_or(0);
    let given = p.opt("resolver").unwrap_or("dhcp");
    let Some(resolver) = Resolver::parse(given) else {
        return Err(Failure::usage(
            "ip",
            format!("'{given}' is not a valid <resolver>"),
        ));
    };
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    home::touch_accessed(&ctx.home.vm_dir(name))?;
    let started = Instant::now();
    // Tart sleeps 1 s between attempts; the fake scales that (at least 10 ms).
    let poll = Duration::from_millis(ctx.knobs.scaled_ms(1000).clamp(10, 1000));
    loop {
        let knobs = crate::rules::load(&ctx.home)?;
        let vmk = knobs.vm(name);
        let running = vm_state(&ctx.home, name) == "running";
        let agent = resolver == Resolver::Agent;
        let found = if vmk.ip_never.unwrap_or(false) {
            Found::Nothing
        } else if running {
            let up = booted(ctx, &knobs, name) && !(agent && vmk.exec_unreachable.unwrap_or(false));
            if up {
                net::found(&running_net(ctx, name), resolver)
            } else {
                Found::Nothing
            }
        } else if vmk.stale_lease.unwrap_or(false) && !agent {
            Found::Lease
        } else {
            Found::Nothing
        };
        if found != Found::Nothing {
            let cfg = VmConfig::read(&ctx.home.config_path(name))?;
            if knobs.loopback_ips.unwrap_or(false) {
                println!(
                    "{}",
                    home::loopback_ip_for_mac(&ctx.home.root, &cfg.mac_address)
                );
            } else if found == Found::Lan {
                println!("{}", home::lan_ip_for_mac(&cfg.mac_address));
            } else {
                println!("{}", home::ip_for_mac(&cfg.mac_address));
            }
            return Ok(());
        }
        sleep(poll).await;
        if started.elapsed() >= Duration::from_secs(u64::from(wait)) {
            let mut msg = String::from("no IP address found");
            if !running {
                msg.push_str(", is your VM running?");
            }
            if agent {
                msg.push_str(
                    " (also make sure that Guest agent for Tart is running inside of a VM)",
                );
            }
            let linux = VmConfig::read(&ctx.home.config_path(name)).is_ok_and(|c| c.os == "linux");
            if resolver == Resolver::Arp && linux {
                msg.push_str(" (not all Linux distributions are compatible with the ARP resolver)");
            }
            return Err(Failure::runtime(msg, 1));
        }
    }
}

pub(crate) async fn exec(ctx: &Ctx, p: &Parsed) -> Result<(), Failure> {
    let name = &p.positionals[0];
    if !ctx.home.vm_exists(name) {
        return Err(Failure::not_found(name));
    }
    if vm_state(&ctx.home, name) != "running" {
        return Err(Failure::not_running(name));
    }
    home::touch_accessed(&ctx.home.vm_dir(name))?;
    // The guest agent answers once the guest booted; otherwise the connection pool gives up
    // after a while (about 10 s, #1220; scaled here).
    let vmk = ctx.knobs.vm(name);
    let give_up = Instant::now()
        + Duration::from_millis(ctx.knobs.scaled_ms(vmk.exec_connect_ms.unwrap_or(10_000)));
    loop {
        let knobs = crate::rules::load(&ctx.home)?;
        let unreachable = knobs.vm(name).exec_unreachable.unwrap_or(false);
        if !unreachable && booted(ctx, &knobs, name) {
            break;
        }
        if Instant::now() >= give_up {
            return Err(Failure::runtime(
                "Failed to connect to the VM using its control socket: GRPCConnectionPoolError(code: deadlineExceeded), is the Tart Guest Agent running?",
                1,
            ));
        }
        sleep(Duration::from_millis(10)).await;
    }
    // A slow agent: the call is connected, the answer comes later.
    sleep(Duration::from_millis(
        ctx.knobs.scaled_ms(vmk.exec_delay_ms.unwrap_or(0)),
    ))
    .await;
    let (argv, stdin) = (&p.positionals[1..], p.flag("interactive"));
    let code = if vmk.real_exec.or(vmk.guest_launcher).unwrap_or(false) {
        crate::guest_exec::run(ctx, name, argv, stdin).await?
    } else {
        guest_command(ctx, name, argv, stdin).await?
    };
    if code == 0 {
        Ok(())
    } else {
        Err(Failure::Exit(code))
    }
}

/// The fake guest's few builtins; returns the guest command's exit code.
async fn guest_command(ctx: &Ctx, name: &str, cmd: &[String], stdin: bool) -> Result<i32, Failure> {
    let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let words = if words.first() == Some(&"sudo") {
        &words[1..]
    } else {
        &words[..]
    };
    let Some((&prog, args)) = words.split_first() else {
        return Ok(0);
    };
    let mut out = std::io::stdout();
    match prog {
        "true" => Ok(0),
        "false" => Ok(1),
        "echo" => {
            writeln!(out, "{}", args.join(" "))?;
            Ok(0)
        }
        "exit" => Ok(args.first().and_then(|a| a.parse().ok()).unwrap_or(0)),
        "sleep" => {
            let secs: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(0.0);
            sleep(Duration::from_secs_f64(secs.max(0.0))).await;
            Ok(0)
        }
        "cat" => {
            if stdin {
                let mut buf = Vec::new();
                std::io::stdin().read_to_end(&mut buf)?;
                out.write_all(&buf)?;
            }
            Ok(0)
        }
        "hostname" => {
            writeln!(out, "{name}")?;
            Ok(0)
        }
        "uname" => {
            let linux = VmConfig::read(&ctx.home.config_path(name)).is_ok_and(|c| c.os == "linux");
            writeln!(out, "{}", if linux { "Linux" } else { "Darwin" })?;
            Ok(0)
        }
        "whoami" => {
            writeln!(out, "admin")?;
            Ok(0)
        }
        "shutdown" | "halt" | "poweroff" => {
            if let Some(pid) = locks::lock_holder(&ctx.home.config_path(name)) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGURG);
            }
            Ok(0)
        }
        other => {
            eprintln!("{other}: command not found");
            Ok(127)
        }
    }
}
