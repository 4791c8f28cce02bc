package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/schooner-ml/schooner/colocation"
)

// A pair run where no program opened a GPU (a machine without one, or programs that never
// ran CUDA) says so instead of reporting a GPU of 0 SMs.
func TestColocationResultSaysWhenNoGPUWasSeen(t *testing.T) {
	var none bytes.Buffer
	printColocation(&none, colocation.Result{})
	assert.Contains(t, none.String(), "GPU: none seen, neither program launched a kernel, so nothing was gated")

	var seen bytes.Buffer
	printColocation(&seen, colocation.Result{Status: colocation.Status{SMs: 132, HPKernels: 10}, MPS: true})
	assert.Contains(t, seen.String(), "GPU: 132 SMs, MPS true")
}
