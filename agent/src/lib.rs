//! tart-kubelet: a virtual kubelet for Tart VMs.
