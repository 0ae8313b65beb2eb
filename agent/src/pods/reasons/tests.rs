use super::*;

#[test]
fn reasons_use_kubelets_words() {
    assert_eq!(WaitingReason::WaitingForVmSlot.as_str(), "WaitingForVMSlot");
    assert_eq!(
        WaitingReason::HostFault(ErrorKind::VmLimit).as_str(),
        "VMLimitReached"
    );
    assert_eq!(
        WaitingReason::CreateContainerConfigError.as_str(),
        "CreateContainerConfigError"
    );
    assert_eq!(TerminatedReason::for_exit(0).as_str(), "Completed");
    assert_eq!(TerminatedReason::for_exit(3).as_str(), "Error");
    assert_eq!(TerminatedReason::OomKilled.as_str(), "OOMKilled");
}
