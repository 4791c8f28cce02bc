package gceapi

import "github.com/schooner-ml/schooner/cloud"

// Backend is what the face needs from the simulated market: the provider itself, its event
// log (to answer zone operations about preemptions after the VM is gone) and the per-VM
// interruption state (to answer the metadata server's instance/preempted). cloud.Fake
// implements it, and so does the market simulator.
type Backend interface {
	cloud.Provider
	cloud.EventSource
	cloud.InterruptionSource
}
