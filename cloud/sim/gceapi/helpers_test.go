package gceapi_test

import (
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/schooner-ml/schooner/cloud/sim/gceapi/gcetest"
)

func getReq(name string) *computepb.GetInstanceRequest {
	return &computepb.GetInstanceRequest{Project: gcetest.Project, Zone: gcetest.ZoneA, Instance: name}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
