//go:build !agentonly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/schooner-ml/schooner/devserver/stack"
)

// Parts of the stack `schooner dev --only` runs alone. Split this way, the Temporal server can
// die and come back while the market, which stands for the cloud and lives in memory, keeps
// its instances: a restarted market would start afresh and hand out the same instance ids
// again.
const (
	devOnlyServer = "server" // the Temporal server (and its UI)
	devOnlyMarket = "market" // the simulated market and its EC2 and Compute faces
)

// runDevPart runs the part f.only names until ctx ends.
func runDevPart(ctx context.Context, f *devFlags, log zerolog.Logger, out io.Writer) error {
	switch f.only {
	case devOnlyServer:
		return runDevServer(ctx, f, log, out)
	case devOnlyMarket:
		return runDevMarket(ctx, f, log, out)
	default:
		return fmt.Errorf("--only %q: want %s or %s", f.only, devOnlyServer, devOnlyMarket)
	}
}

// runDevServer runs the Temporal server with schooner's search attributes and nothing else.
func runDevServer(ctx context.Context, f *devFlags, log zerolog.Logger, out io.Writer) error {
	began := time.Now()
	o := f.stack
	if o.Database == "" {
		o.Database = os.Getenv("SCHOONER_DB")
	}
	o.ServerOnly, o.Logger, o.SDKLogger = true, log, sdkLogger(log)
	s, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer stopWithin(s, 10*time.Second, log)
	srv := s.Server
	fmt.Fprintf(out, "\nschooner dev (server only) is ready (%.1fs)\n", time.Since(began).Seconds())
	fmt.Fprintf(out, "  Temporal gRPC   %s   namespace %s\n", srv.Address(), srv.Namespace())
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(out, "  Temporal UI     http://%s/namespaces/%s/workflows\n", ui, srv.Namespace())
	}
	fmt.Fprintf(out, "  Data            %s\n", srv.Storage())
	fmt.Fprintf(out, "Workers:          schooner worker control --address %s --cloud sim ...; schooner worker node --address %s --node-id <instance id>\n", srv.Address(), srv.Address())
	<-ctx.Done()
	log.Info().Msg("stopping: Temporal server")
	return nil
}

// runDevMarket runs the simulated market of `schooner dev` and serves its EC2 and Compute
// faces, with no Temporal server: control workers reach it with --cloud sim and hear of
// preemptions through the EC2 face's SQS queue (--aws-events-queue).
func runDevMarket(ctx context.Context, f *devFlags, log zerolog.Logger, out io.Writer) error {
	began := time.Now()
	m, _, err := stack.NewMarket(f.stack)
	if err != nil {
		return err
	}
	apis, err := serveSimAPIs(m, f.simEC2Addr, f.simGCEAddr)
	if err != nil {
		return err
	}
	defer apis.Close()
	clock, stopClock := context.WithCancel(context.Background())
	defer stopClock()
	go func() {
		if err := m.Run(clock); err != nil && !errors.Is(err, context.Canceled) {
			log.Error().Err(err).Msg("simulated market stopped")
		}
	}()
	fmt.Fprintf(out, "\nschooner dev (market only) is ready (%.1fs)\n", time.Since(began).Seconds())
	fmt.Fprintf(out, "  Simulated cloud seed %d, %gx wall time, starts %s (simulated)\n", f.stack.Seed, f.stack.TimeScale, m.Now().Format(time.RFC3339))
	fmt.Fprintf(out, "    EC2 API       %s\n", apis.ec2.Addr())
	fmt.Fprintf(out, "    EC2 events    %s   (SQS: --aws-events-queue)\n", apis.ec2.SQSQueueURL())
	fmt.Fprintf(out, "    Compute API   %s\n", apis.gce.URL())
	fmt.Fprintf(out, "Control workers:  schooner worker control --cloud sim --sim-time-scale %g --sim-ec2 %s --sim-gce %s\n",
		f.stack.TimeScale, f.simEC2Addr, f.simGCEAddr)
	<-ctx.Done()
	log.Info().Msg("stopping: simulated market")
	return nil
}
