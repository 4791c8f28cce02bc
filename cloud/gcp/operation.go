package gcp

import (
	"context"
	"fmt"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
)

// wait polls a zone operation until it is DONE and returns it with its classified error.
// It polls through ZoneOperationsAPI rather than Operation.Wait so the interval is the
// provider's (the simulator runs faster than wall time) and so the operation's structured
// error codes are read, not the text Operation.Wait folds them into.
func (p *Provider) wait(ctx context.Context, zone string, op *compute.Operation) (*computepb.Operation, error) {
	cur := op.Proto()
	for cur.GetStatus() != computepb.Operation_DONE {
		t := time.NewTimer(p.opts.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return cur, fmt.Errorf("waiting for operation %s in %s, %w", cur.GetName(), zone, ctx.Err())
		case <-t.C:
		}
		next, err := retry(ctx, p.opts.Retry, func(int) (*computepb.Operation, error) {
			return p.ops.Get(ctx, &computepb.GetZoneOperationRequest{Project: p.opts.Project, Zone: zone, Operation: cur.GetName()})
		})
		if err != nil {
			return cur, fmt.Errorf("polling operation %s in %s, %w", cur.GetName(), zone, err)
		}
		cur = next
	}
	return cur, operationError(cur)
}
