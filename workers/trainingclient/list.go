package trainingclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/schooner-ml/schooner/training"
)

// JobSummary is one job as the visibility store lists it: its Temporal status and
// schooner's search attributes (zero where the job has not upserted one yet).
type JobSummary struct {
	ID string
	// Status is the workflow's status in lower case: running, completed, failed, canceled...
	Status string
	Phase  string
	// Progress is SchoonerProgress: a fraction (0..1).
	Progress float64
	CostUSD  float64
	GPUs     int64
	Zones    []string
	Started  time.Time
}

// ListOptions filter List.
type ListOptions struct {
	// Query is an extra visibility filter ANDed to WorkflowType='TrainingJob', e.g.
	// "SchoonerPhase='training'".
	Query string
	// Limit is the most jobs returned (50 when zero).
	Limit int
}

// List runs a visibility query over TrainingJob workflows, newest first as the server
// orders them.
func (c *Client) List(ctx context.Context, o ListOptions) ([]JobSummary, error) {
	if o.Limit <= 0 {
		o.Limit = 50
	}
	q := "WorkflowType='" + training.WorkflowTrainingJob + "'"
	if o.Query != "" {
		q += " AND (" + o.Query + ")"
	}
	var jobs []JobSummary
	var token []byte
	for len(jobs) < o.Limit {
		resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: int32(min(o.Limit, 100))})
		if err != nil {
			return jobs, fmt.Errorf("listing training jobs: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if len(jobs) >= o.Limit {
				break
			}
			sa := e.GetSearchAttributes().GetIndexedFields()
			j := JobSummary{
				ID:      e.GetExecution().GetWorkflowId(),
				Status:  strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				Started: e.GetStartTime().AsTime(),
			}
			decodeAttr(sa, "SchoonerPhase", &j.Phase)
			decodeAttr(sa, "SchoonerCostUSD", &j.CostUSD)
			decodeAttr(sa, "SchoonerProgress", &j.Progress)
			decodeAttr(sa, "SchoonerGPUs", &j.GPUs)
			decodeAttr(sa, "SchoonerZones", &j.Zones)
			jobs = append(jobs, j)
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	return jobs, nil
}

// decodeAttr reads one search attribute; a missing or malformed one leaves v at its zero
// value, since a job that has not upserted it yet is still worth listing.
func decodeAttr(fields map[string]*commonpb.Payload, name string, v any) {
	if p, ok := fields[name]; ok {
		_ = converter.GetDefaultDataConverter().FromPayload(p, v)
	}
}
