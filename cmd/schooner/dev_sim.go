//go:build !agentonly

package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/schooner-ml/schooner/cloud/sim"
	"github.com/schooner-ml/schooner/cloud/sim/ec2api"
	"github.com/schooner-ml/schooner/cloud/sim/gceapi"
)

// simAPIs are the EC2 and Compute faces of the simulated market `schooner dev` runs, which
// let the real AWS and GCP SDKs (and `schooner cloud --cloud sim`) reach it.
type simAPIs struct {
	ec2 *ec2api.Server
	gce *gceapi.Server
}

func serveSimAPIs(m *sim.Market, ec2Addr, gceAddr string) (*simAPIs, error) {
	s := &simAPIs{ec2: ec2api.New(m, ec2api.Options{Now: m.Now})}
	if err := s.ec2.Start(ec2Addr); err != nil {
		return nil, listenError("simulated EC2 API", ec2Addr, "--sim-ec2-addr", err)
	}
	s.gce = gceapi.NewServer(m, gceapi.Options{Project: simGCPProject, Now: m.Now})
	if err := s.gce.Start(gceAddr); err != nil {
		_ = s.ec2.Close()
		return nil, listenError("simulated Compute API", gceAddr, "--sim-gce-addr", err)
	}
	return s, nil
}

// Close stops serving both APIs.
func (s *simAPIs) Close() {
	_ = s.ec2.Close()
	_ = s.gce.Close()
}

func listenError(what, addr, flag string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s port %s is already in use; choose another with %s", what, addr, flag)
	}
	return fmt.Errorf("serving %s on %s: %w", what, addr, err)
}
