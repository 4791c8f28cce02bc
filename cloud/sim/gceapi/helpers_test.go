package gceapi_test

import (
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
)

func getReq(name string) *computepb.GetInstanceRequest {
	return &computepb.GetInstanceRequest{Project: project, Zone: zoneA, Instance: name}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
