use super::*;
use std::os::unix::process::ExitStatusExt;

#[test]
fn a_missing_bare_name_is_the_agents_path_lookup_error() {
    let e = io::Error::from(io::ErrorKind::NotFound);
    assert_eq!(
        spawn_error("frob", &e),
        "unknown (2): exec: \"frob\": executable file not found in $PATH"
    );
    let e = io::Error::from_raw_os_error(libc::EACCES);
    assert_eq!(
        spawn_error("notes.txt", &e),
        "unknown (2): exec: \"notes.txt\": executable file not found in $PATH"
    );
}

#[test]
fn a_path_that_fails_is_the_agents_fork_exec_error() {
    let e = io::Error::from_raw_os_error(libc::ENOENT);
    assert_eq!(
        spawn_error("./frob", &e),
        "unknown (2): fork/exec ./frob: no such file or directory"
    );
    let e = io::Error::from_raw_os_error(libc::EACCES);
    assert_eq!(
        spawn_error("/etc/passwd", &e),
        "unknown (2): fork/exec /etc/passwd: permission denied"
    );
}

#[test]
fn exit_code_is_the_commands_or_255_after_a_signal() {
    assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
    assert_eq!(exit_code(ExitStatus::from_raw(libc::SIGKILL)), 255);
}
