// Package kubernetes holds plugkit's Kubernetes manifests for running a
// plugin fleet (the YAML files beside this one; docs/remote.md explains
// them) and the test that decodes every one of them strictly with the
// Kubernetes API types and checks them against what a plugin service
// really serves. It has no code of its own.
package kubernetes
