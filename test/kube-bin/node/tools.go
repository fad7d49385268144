//go:build tools

// Package tools pins k8s.io/kubernetes so the node's components (kubelet, kube-proxy,
// kube-controller-manager, kube-scheduler) resolve inside this module. One module for the four
// keeps them on one Kubernetes version. Nothing here is compiled.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
