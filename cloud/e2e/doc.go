// Package e2e drives the simulated spot market through the real AWS and GCP SDKs, over the
// simulator's EC2 and Compute faces: the code path `schooner dev` and `--aws-endpoint` /
// `--gcp-endpoint` use. It holds tests only.
package e2e
