package wfclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/internal/defaults"
)

// Summary is one workflow as the visibility store lists it: its Temporal status and
// schooner's search attributes (zero where the workflow has not upserted one yet).
type Summary struct {
	ID string
	// Status is the workflow's status in lower case: running, completed, failed, canceled...
	Status string
	Phase  string
	// Progress is SchoonerProgress: a fraction (0..1); training jobs only.
	Progress float64
	CostUSD  float64
	GPUs     int64
	Zones    []string
	Started  time.Time
}

// List runs a visibility query over the workflows of one type, newest first as the server
// orders them: at most limit (50 when zero), with extra ANDed to the type.
func List(ctx context.Context, c Conn, workflowType, extra string, limit int) ([]Summary, error) {
	defaults.Positive(&limit, 50)
	q := "WorkflowType='" + workflowType + "'"
	if extra != "" {
		q += " AND (" + extra + ")"
	}
	var out []Summary
	var token []byte
	for len(out) < limit {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: int32(min(limit, 100))})
		if err != nil {
			return out, fmt.Errorf("listing %s workflows: %w", workflowType, err)
		}
		for _, e := range resp.GetExecutions() {
			if len(out) >= limit {
				break
			}
			sa := e.GetSearchAttributes().GetIndexedFields()
			s := Summary{
				ID:      e.GetExecution().GetWorkflowId(),
				Status:  strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				Started: e.GetStartTime().AsTime(),
			}
			decodeAttr(sa, "SchoonerPhase", &s.Phase)
			decodeAttr(sa, "SchoonerCostUSD", &s.CostUSD)
			decodeAttr(sa, "SchoonerProgress", &s.Progress)
			decodeAttr(sa, "SchoonerGPUs", &s.GPUs)
			decodeAttr(sa, "SchoonerZones", &s.Zones)
			out = append(out, s)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return out, nil
}

// decodeAttr reads one search attribute; a missing or malformed one leaves v at its zero
// value, since a workflow that has not upserted it yet is still worth listing.
func decodeAttr(fields map[string]*commonpb.Payload, name string, v any) {
	if p, ok := fields[name]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, v)
	}
}
