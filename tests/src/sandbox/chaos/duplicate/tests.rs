use super::*;

fn refused() -> DuplicateRecord {
    DuplicateRecord {
        node: "mac-mini-1".into(),
        exit_code: Some(1),
        exited_by_itself: true,
        seconds: 3.0,
        message: "another tart-kubelet instance runs node mac-mini-1".into(),
        tart_commands: Vec::new(),
    }
}

#[test]
fn a_duplicate_holds_only_when_it_exits_non_zero_by_itself_without_touching_a_vm() {
    assert_eq!(refused().violation(), None);
    let read_only = DuplicateRecord {
        tart_commands: vec!["--version".into(), "list --format json".into()],
        ..refused()
    };
    assert_eq!(read_only.violation(), None);
    let broken = [
        DuplicateRecord {
            exit_code: None,
            exited_by_itself: false,
            ..refused()
        },
        DuplicateRecord {
            exit_code: Some(0),
            ..refused()
        },
        DuplicateRecord {
            tart_commands: vec!["run tkl-x --no-graphics".into()],
            ..refused()
        },
        DuplicateRecord {
            tart_commands: vec!["delete tkl-x".into()],
            ..refused()
        },
    ];
    for r in broken {
        let v = r.violation();
        assert!(
            v.as_deref().is_some_and(|v| v.contains("mac-mini-1")),
            "{r:?}"
        );
    }
}

#[test]
fn the_message_is_the_last_line() {
    let log = "INFO starting tart-kubelet\n\
                   WARN lease read failed error=timeout\n\
                   tart-kubelet: another tart-kubelet instance runs node n: held by n_0123\n\n";
    assert_eq!(
        last_message(log),
        "tart-kubelet: another tart-kubelet instance runs node n: held by n_0123"
    );
    assert_eq!(last_message(""), "");
}
