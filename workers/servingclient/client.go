// Package servingclient is the typed client of ServingDeployment workflows: deploy, read a
// deployment's status and its pipeline, scale and stop it, list deployments, and keep a
// router (serving/router) pointed at the deployment's ready stages. It uses the Temporal
// client, which is why it is not part of the Temporal-free contract in package serving.
package servingclient

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/schooner-ml/schooner/serving"
	"github.com/schooner-ml/schooner/workers/wfclient"
)

// Client talks to ServingDeployment workflows through a Temporal client it does not own.
type Client struct {
	Temporal client.Client
	// RPCTimeout bounds each query and describe call (wfclient.DefaultRPCTimeout when zero).
	RPCTimeout time.Duration
}

// New is a Client on c with the default timeouts.
func New(c client.Client) *Client { return &Client{Temporal: c} }

func (c *Client) conn() wfclient.Conn {
	return wfclient.Conn{Temporal: c.Temporal, RPCTimeout: c.RPCTimeout}
}

// DeployOptions tune how a deployment is started.
type DeployOptions struct {
	// ID is the deployment id, which is the workflow id (NewID(spec.Name) when empty).
	ID      string
	Options serving.DeployOptions
}

// Deploy starts a ServingDeployment on schooner-control and returns its id. The workflow
// applies the defaults and validates the spec itself; callers validate first only to answer
// sooner.
func (c *Client) Deploy(ctx context.Context, spec serving.Spec, o DeployOptions) (string, error) {
	in := serving.DeployInput{Spec: spec, SubmittedAt: time.Now().UTC(), Options: o.Options}
	summary := fmt.Sprintf("serve %s: %s in %d stages × %d replicas", spec.Name, spec.ModelID(), max(spec.Stages, 1), max(spec.Replicas, 1))
	return wfclient.Start(ctx, c.Temporal, "serving deployment", cmp.Or(o.ID, NewID(spec.Name)), summary, serving.WorkflowServingDeployment, in)
}

// NewID is serve-<name>-<6 random lowercase letters and digits>.
func NewID(name string) string { return wfclient.NewID("serve", name) }

// Status asks the deployment for its status; when no worker answers, the status it last
// published in its memo, marked Stale; never a zero status.
func (c *Client) Status(ctx context.Context, id string) (serving.Status, error) {
	st, stale, err := wfclient.Status[serving.Status](ctx, c.conn(), id, serving.QueryStatus, serving.MemoStatus)
	st.Stale = stale
	return st, err
}

// Pipeline is the deployment's stages as its router sees them (the stages query).
func (c *Client) Pipeline(ctx context.Context, id string) (serving.Pipeline, error) {
	return wfclient.Query[serving.Pipeline](ctx, c.conn(), id, serving.QueryStages)
}

// Scale sets the number of replicas of either pool (the scale update, validated by the
// workflow) and returns the status once the deployment has laid them out.
func (c *Client) Scale(ctx context.Context, id string, req serving.ScaleRequest) (serving.Status, error) {
	var st serving.Status
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: serving.UpdateScale, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{req},
	})
	if err != nil {
		return st, fmt.Errorf("scaling %s: %w", id, err)
	}
	return st, h.Get(ctx, &st)
}

// Stop drains and stops the deployment and returns its final status (the stop update).
func (c *Client) Stop(ctx context.Context, id, reason string) (serving.Status, error) {
	var st serving.Status
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: serving.UpdateStop, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{serving.StopRequest{Reason: reason}},
	})
	if err != nil {
		return st, fmt.Errorf("stopping %s: %w", id, err)
	}
	if err := h.Get(ctx, &st); err != nil {
		return st, fmt.Errorf("stopping %s: %w", id, err)
	}
	return st, nil
}

// List runs a visibility query over ServingDeployment workflows, newest first.
func (c *Client) List(ctx context.Context, extra string, limit int) ([]wfclient.Summary, error) {
	return wfclient.List(ctx, c.conn(), serving.WorkflowServingDeployment, extra, limit)
}
