//! The guest's files written while the VM is cloned: a write that fails holds the Pod at
//! `CreateContainerConfigError` before `tart run` and is retried after the backoff; a deleted
//! Pod's write ends before its guest directory is removed; the write starts once a tart step
//! is under way.

use super::test_support::*;

#[tokio::test(start_paused = true)]
async fn a_failed_guest_write_is_found_after_the_clone_it_overlapped_and_the_vm_never_runs() {
    let mut r = rig(MemTart::new(), 2);
    let vm = VmNaming::default().vm_name(&uid(40)).unwrap();
    let layout = r.worker.cfg.guest.layout.clone();
    // A symlink where the VM's directory belongs: the write refuses it.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), layout.vm_dir(&vm)).unwrap();
    let mut h = spawn(
        r.worker.clone(),
        vm.clone(),
        input(&uid(40), RestartPolicy::Always),
        Start::Fresh,
        0,
    );
    let s = within(&mut h, Duration::from_secs(1), "config error", |s| {
        waiting_for(s, WaitingReason::CreateContainerConfigError)
    })
    .await;
    assert!(!s.facts.prepared, "prepared again after the backoff");
    let clones = r.tart.calls_of(Op::Clone).len();
    assert!(
        clones > 0,
        "the write overlapped the clone: its failure is found at the run"
    );
    assert!(
        r.tart.calls_of(Op::Run).is_empty(),
        "no run without its guest"
    );
    assert!(
        !r.worker.slots.holds(&uid(40)),
        "the slot is free while backing off"
    );
    assert!(r.reasons().contains(&"Failed".to_string()));
    std::fs::remove_file(layout.vm_dir(&vm)).unwrap();
    within(&mut h, Duration::from_secs(60), "running", running_with_ip).await;
    assert_eq!(r.tart.calls_of(Op::Run).len(), 1);
    assert_eq!(
        r.tart.calls_of(Op::Clone).len(),
        clones,
        "the clone is kept"
    );
    assert!(layout.control(&vm).join("version").is_file());
    assert!(
        r.metrics()
            .contains("tart_kubelet_pod_agent_overhead_seconds_count 0"),
        "a start after a failure is not measured"
    );
}

#[tokio::test]
async fn a_pod_deleted_before_its_run_leaves_no_guest_directory() {
    let r = rig(MemTart::new(), 0);
    let vm = VmNaming::default().vm_name(&uid(41)).unwrap();
    let layout = r.worker.cfg.guest.layout.clone();
    let i = input(&uid(41), RestartPolicy::Always);
    let mut h = spawn(r.worker.clone(), vm.clone(), i.clone(), Start::Fresh, 0);
    until(&mut h, "waiting for a slot", |s| {
        waiting_for(s, WaitingReason::WaitingForVmSlot)
    })
    .await;
    let mut del = i;
    del.facts.deleting = true;
    h.input.send_replace(del);
    until(&mut h, "deleted", |s| !s.facts.cloned && !s.facts.prepared).await;
    assert!(r.tart.calls_of(Op::Run).is_empty());
    assert!(
        !layout.vm_dir(&vm).exists(),
        "the guest directory is removed"
    );
}

/// A step that is pending at its first poll and done at its second, noting each in `log`.
struct TwoPolls<'a> {
    log: &'a std::cell::RefCell<Vec<&'static str>>,
    polled: bool,
}

impl std::future::Future for TwoPolls<'_> {
    type Output = u8;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<u8> {
        if self.polled {
            self.log.borrow_mut().push("step done");
            return std::task::Poll::Ready(7);
        }
        self.polled = true;
        self.log.borrow_mut().push("step under way");
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[tokio::test]
async fn the_write_starts_once_the_tart_step_is_under_way_and_waits_for_a_step_done_at_once() {
    use super::guest_write::alongside;
    let log = std::cell::RefCell::new(Vec::new());
    let out = alongside(
        TwoPolls {
            log: &log,
            polled: false,
        },
        || log.borrow_mut().push("write started"),
    )
    .await;
    assert_eq!(out, 7);
    assert_eq!(
        *log.borrow(),
        ["step under way", "write started", "step done"]
    );

    let mut started = false;
    let out = alongside(async { 8 }, || started = true).await;
    assert_eq!(out, 8);
    assert!(
        !started,
        "a step done at its first poll leaves the write to the next"
    );
}
