use super::*;

#[test]
fn env_file_lines_become_a_map() {
    let env = parse_env("SERVER=https://127.0.0.1:1234\nKUBECONFIG=/r/kubeconfig\n\nbad\n");
    assert_eq!(env["SERVER"], "https://127.0.0.1:1234");
    assert_eq!(env["KUBECONFIG"], "/r/kubeconfig");
    assert_eq!(env.len(), 2);
}

#[test]
fn the_niceness_is_read_after_the_last_parenthesis_of_the_command_name() {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    // stime cutime cstime priority nice ...
    let stat = "4242 (kube (x) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 30 10 12 0 77\n";
    assert_eq!(nice_from_stat(stat), Some(10));
    let negative = "7 (etcd) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 15 -5 4 0 1\n";
    assert_eq!(nice_from_stat(negative), Some(-5));
    assert_eq!(nice_from_stat("7 (etcd) R 1 7"), None);
    assert_eq!(nice_from_stat("no name here"), None);
}
