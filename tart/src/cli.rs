//! [`TartCli`]: the [`Tart`] implementation that runs a program (real `tart`, or `fake-tart`)
//! with an explicit `TART_HOME`, `CI=1`, a deadline per operation and bounded kill-and-retry.
//!
//! Argv comes from [`crate::command`], output goes to [`crate::parse`], failures to
//! [`crate::error::classify`]; process mechanics are in [`crate::process`] (short commands)
//! and [`crate::run`] (`tart run`), the stop sequence in [`crate::stop`]. Building a client is
//! `builder.rs`'s job, which refers to this file and not the other way round.

use std::{ffi::OsString, net::Ipv4Addr, path::PathBuf, sync::Arc, time::Duration};

use tracing::{Instrument, debug, debug_span, field};

pub(crate) mod builder;

use crate::{
    Attempt, AttemptOutcome, Credentials, Deadlines, Error, ErrorKind, ExecOpts, ExecOutput,
    ExecSession, IpResolver, Observer, Op, PruneOpts, Result, RunOpts, RunningVm, SetOpts,
    SizeDeadline, StopOutcome, Tart, Version, VmDetails, VmInfo, VmName, VmProcess, command,
    error::classify_exec,
    inflight, parse,
    process::{self, Ended, Killed, Outcome},
    retry::RetryPolicy,
    run::{self, Launch},
    stop,
};

/// Drives the `tart` CLI. Cheap to clone.
#[derive(Clone)]
pub struct TartCli {
    inner: Arc<Inner>,
}

struct Inner {
    program: PathBuf,
    tart_home: PathBuf,
    env: Vec<(OsString, OsString)>,
    env_clear: bool,
    deadlines: Deadlines,
    retry: RetryPolicy,
    observer: Arc<dyn Observer>,
    output_cap: usize,
    /// Where in-flight commands are recorded ([`inflight`]), when tracked.
    inflight: Option<PathBuf>,
}

impl std::fmt::Debug for TartCli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TartCli")
            .field("program", &self.inner.program)
            .field("tart_home", &self.inner.tart_home)
            .field("deadlines", &self.inner.deadlines)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

/// One call: what to run and how.
struct Call<'a> {
    op: Op,
    vm: Option<&'a VmName>,
    args: Vec<OsString>,
    deadline: Duration,
    stall: Option<Duration>,
    size_deadline: Option<SizeDeadline>,
    creds: Option<&'a Credentials>,
    retry: RetryPolicy,
}

impl TartCli {
    /// SIGKILL the process groups of tart commands that an earlier agent left running when it
    /// died (recorded when the client was built with `track_inflight(true)`); returns their
    /// PIDs. Call once at start-up: a hung orphan would otherwise hold Tart's pull or home lock
    /// (docs/reference/tart-cli.md §1.4).
    pub async fn reap_orphans(&self) -> Vec<u32> {
        match &self.inner.inflight {
            Some(dir) => inflight::reap(dir, &self.inner.program).await,
            None => vec![],
        }
    }

    /// `$TART_HOME/vms/<vm>/config.json`, whose fcntl lock marks a running VM
    /// (docs/reference/tart-cli.md §1.4).
    pub(crate) fn config_json(&self, vm: &VmName) -> PathBuf {
        self.inner
            .tart_home
            .join("vms")
            .join(vm.as_str())
            .join("config.json")
    }

    fn env_with(&self, creds: Option<&Credentials>) -> Vec<(OsString, OsString)> {
        let mut env = self.inner.env.clone();
        if let Some(c) = creds {
            // docs/reference/tart-cli.md §1.2: the environment provider is consulted first; never
            // argv.
            env.push(("TART_REGISTRY_USERNAME".into(), c.username.clone().into()));
            env.push(("TART_REGISTRY_PASSWORD".into(), c.password.clone().into()));
            if let Some(h) = &c.hostname {
                env.push(("TART_REGISTRY_HOSTNAME".into(), h.clone().into()));
            }
        }
        env
    }

    /// Run `call` with retries; a non-zero exit is an error (except for `exec`).
    async fn call(&self, call: Call<'_>) -> Result<Outcome> {
        let retry = call.retry;
        retry
            .run(call.op, self.inner.observer.as_ref(), |n| {
                self.attempt(&call, n)
            })
            .await
    }

    async fn attempt(&self, call: &Call<'_>, attempt: u32) -> Result<Outcome> {
        let env = self.env_with(call.creds);
        let span = debug_span!(
            "tart",
            cmd = call.op.as_str(),
            vm = call.vm.map_or("", VmName::as_str),
            attempt,
            exit_code = field::Empty
        );
        async {
            let spec = process::Spec {
                program: &self.inner.program,
                args: &call.args,
                env: &env,
                env_clear: self.inner.env_clear,
                deadline: call.deadline,
                stall: call.stall,
                size_deadline: call.size_deadline,
                output_cap: self.inner.output_cap,
                inflight: self.inner.inflight.as_deref(),
            };
            debug!(argv = %command::display(&call.args), "running tart");
            let outcome = process::run(&spec, &mut |_| {})
                .await
                .map_err(|e| Error::spawn(call.op, &self.inner.program, e))?;
            if let Some(code) = outcome.code() {
                tracing::Span::current().record("exit_code", code);
            }
            match outcome.ended {
                Ended::Exited(_) if outcome.success() || call.op == Op::Exec => Ok(outcome),
                Ended::Exited(_) => {
                    let err = Error::from_exit(call.op, outcome.code(), &outcome.stderr);
                    debug!(kind = err.kind.as_str(), stderr = %outcome.stderr, "tart failed");
                    Err(err)
                }
                Ended::Killed(why) => {
                    let (kind, what) = match why {
                        Killed::Deadline => (ErrorKind::Timeout, "deadline"),
                        Killed::Stall => (ErrorKind::Stalled, "stall window"),
                    };
                    let limit = match why {
                        Killed::Deadline => call.deadline,
                        Killed::Stall => call.stall.unwrap_or_default(),
                    };
                    debug!(stderr = %outcome.stderr, "tart killed");
                    Err(Error::new(
                        call.op,
                        kind,
                        None,
                        format!("{what} of {limit:?} passed; process group killed"),
                    ))
                }
            }
        }
        .instrument(span)
        .await
    }

    fn simple<'a>(
        &self,
        op: Op,
        vm: Option<&'a VmName>,
        args: Vec<OsString>,
        deadline: Duration,
    ) -> Call<'a> {
        Call {
            op,
            vm,
            args,
            deadline,
            stall: None,
            size_deadline: None,
            creds: None,
            retry: self.inner.retry,
        }
    }
}

fn arg_error(op: Op, e: command::ArgError) -> Error {
    Error::new(op, ErrorKind::Usage, None, e.to_string())
}

fn parse_error(op: Op, e: parse::ParseError) -> Error {
    Error::new(op, ErrorKind::Other, Some(0), e.to_string())
}

impl Tart for TartCli {
    type Vm = VmProcess;

    async fn version(&self) -> Result<Version> {
        let d = self.inner.deadlines.version;
        let o = self
            .call(self.simple(Op::Version, None, command::version(), d))
            .await?;
        Ok(parse::version(&o.stdout))
    }

    async fn list(&self) -> Result<Vec<VmInfo>> {
        let d = self.inner.deadlines.list;
        let o = self
            .call(self.simple(Op::List, None, command::list(), d))
            .await?;
        parse::list(&o.stdout).map_err(|e| parse_error(Op::List, e))
    }

    async fn get(&self, vm: &VmName) -> Result<VmDetails> {
        let d = self.inner.deadlines.get;
        let o = self
            .call(self.simple(Op::Get, Some(vm), command::get(vm), d))
            .await?;
        parse::get(&o.stdout).map_err(|e| parse_error(Op::Get, e))
    }

    async fn pull(&self, image: &str, creds: Option<&Credentials>) -> Result<()> {
        let d = &self.inner.deadlines;
        let args = command::pull(image).map_err(|e| arg_error(Op::Pull, e))?;
        self.call(Call {
            stall: Some(d.pull_stall),
            size_deadline: Some(d.pull_size),
            creds,
            ..self.simple(Op::Pull, None, args, d.pull)
        })
        .await
        .map(drop)
    }

    async fn clone_vm(&self, source: &str, vm: &VmName, creds: Option<&Credentials>) -> Result<()> {
        let d = &self.inner.deadlines;
        let args = command::clone(source, vm).map_err(|e| arg_error(Op::Clone, e))?;
        // An uncached remote source is pulled first with the same progress lines
        // (docs/reference/tart-cli.md §2.2).
        let (deadline, stall, size_deadline) = if command::is_remote(source) {
            (d.clone.max(d.pull), Some(d.pull_stall), Some(d.pull_size))
        } else {
            (d.clone, None, None)
        };
        self.call(Call {
            stall,
            size_deadline,
            creds,
            ..self.simple(Op::Clone, Some(vm), args, deadline)
        })
        .await
        .map(drop)
    }

    async fn set(&self, vm: &VmName, opts: &SetOpts) -> Result<()> {
        let d = self.inner.deadlines.set;
        self.call(self.simple(Op::Set, Some(vm), command::set(vm, opts), d))
            .await
            .map(drop)
    }

    async fn run(&self, vm: &VmName, opts: &RunOpts) -> Result<VmProcess> {
        let args = command::run(vm, opts).map_err(|e| arg_error(Op::Run, e))?;
        let env = self.env_with(None);
        let start = tokio::time::Instant::now();
        let r = run::spawn(Launch {
            vm,
            program: &self.inner.program,
            args,
            env: &env,
            env_clear: self.inner.env_clear,
            opts,
        })
        .instrument(debug_span!("tart", cmd = "run", vm = vm.as_str()))
        .await;
        self.inner.observer.attempt(&Attempt {
            op: Op::Run,
            attempt: 1,
            outcome: match &r {
                Ok(_) => AttemptOutcome::Ok,
                Err(e) => AttemptOutcome::Error(e.kind),
            },
            elapsed: start.elapsed(),
            killed: false,
            will_retry: false,
        });
        r
    }

    async fn attach(&self, vm: &VmName, opts: &RunOpts) -> Result<Option<VmProcess>> {
        let config = self.config_json(vm);
        let holder = run::lock_holder(&config).map_err(|e| {
            Error::new(
                Op::Run,
                ErrorKind::Other,
                None,
                format!("reading lock of {}: {e}", config.display()),
            )
        })?;
        Ok(holder.map(|pid| run::adopt(vm, pid, config, opts)))
    }

    async fn ip(&self, vm: &VmName, wait: Duration, resolver: IpResolver) -> Result<Ipv4Addr> {
        let d = wait + self.inner.deadlines.ip_extra;
        let o = self
            .call(self.simple(Op::Ip, Some(vm), command::ip(vm, wait, resolver), d))
            .await?;
        parse::ip(&o.stdout).map_err(|e| parse_error(Op::Ip, e))
    }

    async fn stop(&self, vm: &VmProcess, grace: Duration) -> Result<StopOutcome> {
        let name = vm.name().clone();
        let extra = self.inner.deadlines.stop_extra;
        let outcome = stop::stop_sequence(vm, grace, |timeout| async move {
            let call = Call {
                retry: RetryPolicy::none(),
                ..self.simple(
                    Op::Stop,
                    Some(&name),
                    command::stop(&name, timeout),
                    timeout + extra,
                )
            };
            self.call(call).await.map(drop)
        })
        .await?;
        debug!(vm = %vm.name(), outcome = outcome.as_str(), "vm stopped");
        Ok(outcome)
    }

    async fn delete(&self, vm: &VmName) -> Result<()> {
        let d = self.inner.deadlines.delete;
        match self
            .call(self.simple(Op::Delete, Some(vm), command::delete(vm), d))
            .await
        {
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            r => r.map(drop),
        }
    }

    async fn delete_image(&self, image: &str) -> Result<()> {
        let d = self.inner.deadlines.delete;
        let args = command::delete_image(image).map_err(|e| arg_error(Op::Delete, e))?;
        match self.call(self.simple(Op::Delete, None, args, d)).await {
            Err(e) if e.kind == ErrorKind::NotFound => Ok(()),
            r => r.map(drop),
        }
    }

    async fn exec(&self, vm: &VmName, argv: &[String], deadline: Duration) -> Result<ExecOutput> {
        // Never retried: the guest command may not be idempotent.
        let call = Call {
            retry: RetryPolicy::none(),
            ..self.simple(Op::Exec, Some(vm), command::exec(vm, argv), deadline)
        };
        let o = self.call(call).await?;
        let code = o.code().unwrap_or(-1);
        if code != 0
            && let Some(kind) = classify_exec(&o.stderr)
        {
            let mut e = Error::from_exit(Op::Exec, Some(code), &o.stderr);
            e.kind = kind;
            return Err(e);
        }
        Ok(ExecOutput {
            exit_code: code,
            stdout: o.stdout,
            stderr: o.stderr,
        })
    }

    async fn exec_streaming(
        &self,
        vm: &VmName,
        argv: &[String],
        opts: ExecOpts,
    ) -> Result<ExecSession> {
        let args = command::exec_streaming(vm, argv, opts.stdin, opts.tty.is_some());
        let env = self.env_with(None);
        debug!(%vm, argv = %command::display(&args), "starting a streaming tart exec");
        let spawn = crate::exec::Spawn {
            program: &self.inner.program,
            args: &args,
            env: &env,
            env_clear: self.inner.env_clear,
            inflight: self.inner.inflight.as_deref(),
        };
        crate::exec::spawn(&spawn, opts).map_err(|e| Error::spawn(Op::Exec, &self.inner.program, e))
    }

    async fn prune(&self, opts: &PruneOpts) -> Result<()> {
        let d = self.inner.deadlines.prune;
        self.call(self.simple(Op::Prune, None, command::prune(opts), d))
            .await
            .map(drop)
    }

    async fn cached_digest(&self, host: &str, repository: &str, tag: &str) -> Option<String> {
        let link = parse::tag_link(&self.inner.tart_home, host, repository, tag)?;
        // A local file system call, still bounded: TART_HOME may be on a stalled volume.
        let target = tokio::time::timeout(Duration::from_secs(5), tokio::fs::read_link(&link))
            .await
            .ok()?
            .ok()?;
        parse::digest_name(target.file_name()?.to_str()?)
    }
}
