// Package gcp implements cloud.Provider over Compute Engine with the
// cloud.google.com/go/compute REST clients, and cloud.InterruptionWatcher over the GCE
// metadata server.
//
// Instances are identified by their GCE name. A VM's zone is remembered from the calls
// that saw it and otherwise found by asking each configured zone, so ids stay the plain
// names that GCE, the node agent and the simulator share.
//
// Spot VMs are created with provisioningModel SPOT and instanceTerminationAction DELETE:
// a preempted VM then costs nothing while it waits to be noticed. GCE keeps a zone
// operation of type compute.instances.preempted for it, which is how Describe tells a
// preemption from a deletion, whether the VM is still TERMINATED or already gone.
//
// Compute Engine has no spot price API (spot prices live in the Cloud Billing catalog), so
// Offerings come from the schooner catalog: on-demand list prices and a typical spot
// discount, as estimates. GCE gives no capacity hint either: SpotCapacity is -1.
//
// Every GCE error code is classified into the typed errors of package cloud in errors.go,
// and throttled calls are retried with bounded backoff (retry.go).
package gcp
