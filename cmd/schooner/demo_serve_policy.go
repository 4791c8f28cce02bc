//go:build !agentonly

package main

import (
	"github.com/schooner-ml/schooner/fleet"
	"github.com/schooner-ml/schooner/policy"
	"github.com/schooner-ml/schooner/serving"
)

// The spot policies `schooner demo serve --policy` compares through the whole stack, named as
// the trace-replay simulator names them (policy.ServePolicies; bench/servingspot runs both).
const (
	policySpotAware   = policy.ServeSpotAware
	policyRestartOnly = policy.ServeRestartOnly
	policyOnDemand    = policy.ServeOnDemand
)

// applyServePolicy turns the spec and options into the named policy: spot-aware leaves them
// as they are (a spot-with-fallback spec migrates on notices and returns to spot);
// restart-only is what serving on spot without schooner looks like (spot only, notices
// ignored, no KV replication, so a lost stage is restarted and its requests recomputed);
// on-demand buys on-demand machines only, the cost baseline.
func applyServePolicy(name string, spec *serving.Spec, o *serving.DeployOptions) {
	switch name {
	case policyRestartOnly:
		spec.Spot, spec.KVReplication = fleet.SpotOnly, serving.ReplicationOff
		o.IgnoreNotices, o.SpotReturnEvery = true, -1
	case policyOnDemand:
		spec.Spot = fleet.OnDemandOnly
	}
}
