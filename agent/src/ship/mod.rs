//! Shipping: launchd install/uninstall and doctor (issue 7).
