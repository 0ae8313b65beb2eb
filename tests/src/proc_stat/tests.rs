use super::*;

#[test]
fn fields_are_counted_after_the_last_parenthesis_of_the_command_name() {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    // utime stime cutime cstime priority nice ...
    let stat = "4242 (kube (x) d) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 30 10 12 0 77\n";
    assert_eq!(field(stat, 3), Some("S"));
    assert_eq!(number::<u32>(stat, 4), Some(1));
    assert_eq!(number::<i32>(stat, 19), Some(10));
    let negative = "7 (etcd) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 15 -5 4 0 1\n";
    assert_eq!(number::<i32>(negative, 19), Some(-5));
    assert_eq!(number::<i32>("7 (etcd) R 1 7", 19), None);
    assert_eq!(field("no name here", 3), None);
    assert_eq!(field(stat, 2), None, "the name is not a counted field");
}
