package ec2api

import (
	"encoding/xml"
)

type terminateInstancesResponse struct {
	XMLName xml.Name `xml:"TerminateInstancesResponse"`
	responseHeader
	Changes []stateChangeXML `xml:"instancesSet>item"`
}

type stateChangeXML struct {
	InstanceID    string   `xml:"instanceId"`
	CurrentState  stateXML `xml:"currentState"`
	PreviousState stateXML `xml:"previousState"`
}

// terminateInstances ends the named instances. Like EC2 it is all or nothing: one unknown id
// fails the call with InvalidInstanceID.NotFound and terminates none; ids already terminated
// are fine and report terminated → terminated.
func (s *Server) terminateInstances(c *call) (any, *apiError) {
	ids := list(c.params, "InstanceId")
	if len(ids) == 0 {
		return nil, missing("InstanceId")
	}
	before, aerr := s.instances(c.ctx, c.region, ids)
	if aerr != nil {
		return nil, aerr
	}
	ctx := c.ctx
	if err := s.backend.Terminate(ctx, ids); err != nil {
		return nil, fromBackend(err, "InvalidInstanceID.NotFound")
	}
	after, err := s.backend.Describe(ctx, ids)
	if err != nil {
		return nil, fromBackend(err, "InvalidInstanceID.NotFound")
	}
	now := map[string]stateXML{}
	for _, inst := range after {
		now[inst.ID] = ec2State(inst.State)
	}
	out := terminateInstancesResponse{responseHeader: c.header()}
	for _, inst := range before {
		cur, ok := now[inst.ID]
		if !ok {
			cur = stateXML{48, "terminated"}
		}
		out.Changes = append(out.Changes, stateChangeXML{InstanceID: inst.ID, CurrentState: cur, PreviousState: ec2State(inst.State)})
	}
	return out, nil
}
