package devserver

import (
	"fmt"

	"github.com/schooner-ml/schooner/internal/netaddr"
)

// checkLoopback refuses an address other machines can reach. The embedded server has no
// authentication: anyone who reaches its frontend (gRPC, or its HTTP API with a plain POST)
// can start a TrainingJob whose trainer.command runs on every node agent, as the agent's
// user. A server for other machines is a real cluster (deploy/) with mTLS or API keys; a
// person elsewhere reaches this one through an SSH tunnel.
func checkLoopback(ip string) error {
	if netaddr.IsLoopback(ip) {
		return nil
	}
	return fmt.Errorf("--ip %s: the embedded Temporal server has no authentication, and whoever reaches it can run commands on every node agent; "+
		"it binds loopback addresses only (127.0.0.1, ::1). Reach it from elsewhere through an SSH tunnel "+
		"(ssh -L 7233:127.0.0.1:7233 -L 8233:127.0.0.1:8233 HOST), or run a Temporal cluster with mTLS or API keys (deploy/)", ip)
}
